"""The suite checks itself: every planted bug must be caught by the gates meant for it."""
from crosscheck.selftest import MUTATIONS, selftest


def test_selftest_catches_every_planted_bug():
    outcomes, control = selftest(progress=False)
    for r in control:
        print(f"clean copy: {r[0]} = {r[1]:.3e} (gate {r[2]:.0e})")
    for o in outcomes:
        print(f"{'caught ' if o.caught else 'ESCAPED'} {o.mutation}: {o.detail}")
    assert all(r[3] for r in control), "the clean copy must pass, or 'caught' means nothing"
    escaped = [o.mutation for o in outcomes if not o.caught]
    print(f"caught {len(outcomes) - len(escaped)} of {len(outcomes)} planted bugs")
    assert len(outcomes) == len(MUTATIONS) and not escaped, f"escaped: {escaped}"
