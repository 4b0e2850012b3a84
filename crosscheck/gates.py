"""What each gate's number is: one table, gate name → unit and definition.

Every gate the regression suite records goes through the `gate` fixture
(regression/conftest.py), which refuses a name missing here, so a new gate
cannot land undocumented. The fixture records the unit in the gate history;
`crosscheck report` shows it beside each number and lists these definitions.

"scaled error" throughout is ‖a − b‖∞ / max(1, ‖b‖∞) (mechdyn.core.sample.scaled_error):
relative for large b, absolute for small. A gate passes when its metric is at
or below its threshold, except the ratio gates, which pass inside a window.
"""
from __future__ import annotations

from dataclasses import dataclass

# gap(dt) / gap(dt/2) windows, as crosscheck/chrono/checks.py's RATIO_FIRST and RATIO_SECOND (a test holds them equal)
FIRST_ORDER = (1.8, 2.2)
SECOND_ORDER = (3.6, 4.4)


@dataclass(frozen=True)
class Gate:
    unit: str
    definition: str
    # a ratio gate passes inside one of these (lo, hi) windows; its recorded threshold is only the first one's hi
    windows: tuple[tuple[float, float], ...] = ()


SCALED = "scaled error"
_QDD_STATES = "max over the random states of the scaled error"
_GOLDEN = "against the golden stored in regression/golden/ (NaN: no golden, or one that no longer fits the model)"


def _gap(dt: str, route: str) -> Gate:
    return Gate("m or rad", f"the largest gap between the generated and Chrono's trajectories ({route}) at {dt}, "
                "over every body: position in m or attitude in rad, whichever is worse")


def _react_gap(dt: str, route: str) -> Gate:
    return Gate(SCALED, f"the drivers' reactions along the trajectories ({route}) at {dt}: max |reaction_generated − "
                "Chrono's motor| / max(1, the run's largest |reaction|)")


def _ratio(what: str, windows: tuple[tuple[float, float], ...]) -> Gate:
    shown = " or ".join(f"{(lo + hi) / 2:g} ± {(hi - lo) / 2:g}" for lo, hi in windows)
    return Gate("ratio", f"{what}(dt) / {what}(dt/2): passes inside {shown} (the order of the two schemes' gap), "
                "or when both gaps are below 1e-10 (the schemes coincide)", windows)


GATES: dict[str, Gate] = {
    # the dense reference (crosscheck/dense_compare.py)
    "crba_vs_aba": Gate(SCALED, f"{_QDD_STATES} of qdd between the dense reference's two routes, CRBA (H qdd = "
                        "tau − C, dense solve) and the articulated-body algorithm"),
    "gen_vs_dense": Gate(SCALED, f"{_QDD_STATES}: max |qdd_generated − qdd_dense| / max(1, |qdd_dense|), the "
                         "generated C against the dense CRBA route"),
    "observe_vs_dense": Gate(SCALED, f"{_QDD_STATES} of fwd_dyn_observe (points' motion, TSDA l and l̇, RSDA q and "
                             "q̇) against the dense kinematics; 0 when the model observes nothing"),
    "find_roundtrip": Gate("count", "name lookups (find) of declared and bogus names that return the wrong index "
                           "or error"),
    "rank_K": Gate("count", "random states at which the loop-closure Jacobian K has rank below nc"),
    # trajectories (crosscheck/trajectory.py)
    "order_euler": Gate("|ratio − 2|", "energy drift at dt over that at dt/2 with explicit Euler, minus its "
                        "first-order 2 (0 when the drift is below round-off)"),
    "order_verlet": Gate("|ratio − 4|", "energy drift at dt over that at dt/2 with Verlet, minus its second-order 4 "
                         "(0 when the drift is below round-off)"),
    "reversibility": Gate("m or rad", "max |q − q0| after the drift +0.1 s then −0.1 s from 20 states"),
    "closure_drift": Gate("m or rad", "the largest loop-closure error |φ| over 1 s of Verlet at dt 1e-4 from a "
                          "closed state"),
    "dissipation": Gate("relative", "the dampers' work: the worse of C against NumPy's trapezoid and stride 20 "
                        "against stride 1, over the total work dissipated"),
    # the peers (crosscheck/pinocchio, crosscheck/mujoco)
    "pinocchio_vs_generated": Gate(SCALED, f"{_QDD_STATES} of qdd: Pinocchio on the URDF export (ABA; KKT on loop "
                                   "models) against the generated C"),
    "pinocchio_vs_dense": Gate(SCALED, f"{_QDD_STATES} of qdd: Pinocchio on the URDF export against the dense "
                               "reference"),
    "mujoco_vs_generated": Gate(SCALED, f"{_QDD_STATES} of qdd: MuJoCo's mj_forward on the MJCF export (contacts "
                                "off) against the generated C"),
    "mjcf_accel_vs_mujoco": Gate(SCALED, "max over the random states whose mass matrix has κ(M) <= 1e6 of the "
                                 "scaled error of qdd: MuJoCo's mj_forward on an MJCF file (contacts, constraints, "
                                 "actuation, passive forces and armature off) against the generated C of mechdyn's "
                                 "import of the same file (crosscheck/mujoco/imported.py)"),
    "mjcf_accel_vs_mujoco_cond": Gate("of max(1e-9, κ(M) ε)", "max over all the random states of that scaled error "
                                      "over max(1e-9, κ(M) ε), κ(M) ε being the round-off bound of a solve with the "
                                      "state's mass matrix (a body with three hinges near gimbal lock reaches κ 1e9); "
                                      "passes at or below 1"),
    "derivs_vs_pinocchio": Gate(SCALED, "the worst block of fwd_dyn_derivs (∂qdd/∂q, qd, tau, act, fext) against "
                                "Pinocchio's computeABADerivatives, scaled per block, over 50 random states"),
    # the external suite: example-robot-data's URDFs, each parsed by Pinocchio itself (regression/test_robot_suite.py)
    "robot_vs_pinocchio": Gate(SCALED, f"{_QDD_STATES} of qdd (1000): Pinocchio's ABA on its own parse of the robot's "
                               "URDF (buildModelFromUrdf) against the generated C of mechdyn's import of the same file"),
    "robot_derivs_vs_pinocchio": Gate(SCALED, "the worst block of fwd_dyn_derivs against Pinocchio's "
                                      "computeABADerivatives on its own parse of the robot's URDF, scaled per block, "
                                      "over 50 random states"),
    "robot_dense_vs_generated": Gate(SCALED, f"{_QDD_STATES} of qdd (200): the dense reference against the generated "
                                     "C, both on mechdyn's import of the robot's URDF"),
    # Project Chrono (crosscheck/chrono/checks.py)
    "qd_consistency": Gate(SCALED, "the velocity map against fourth-order finite differences of the position map, "
                           "in joint coordinates, over the states (a sign inversion shows as 2)"),
    "accel_vs_dense": Gate(SCALED, f"{_QDD_STATES} of qdd: Chrono's KKT solve against the dense reference"),
    "accel_vs_generated": Gate(SCALED, f"{_QDD_STATES} of qdd: Chrono's KKT solve against the generated C"),
    "react_vs_dense": Gate(SCALED, "the drivers' reactions at the states: Chrono's motors against the dense "
                           "reference's, max scaled error"),
    "react_vs_generated": Gate(SCALED, "the drivers' reactions at the states: Chrono's motors against the generated "
                               "C's, max scaled error"),
    "sim_gap_dt": _gap("dt 2e-5 over 0.25 s", "explicit steppers"),
    "sim_gap_dt2": _gap("dt/2", "explicit steppers"),
    "sim_ratio": _ratio("gap", (FIRST_ORDER, SECOND_ORDER)),
    "react_gap_dt": _react_gap("dt 2e-5 over 0.25 s", "explicit steppers"),
    "react_gap_dt2": _react_gap("dt/2", "explicit steppers"),
    "react_ratio": _ratio("reaction gap", (FIRST_ORDER, SECOND_ORDER)),
    "hht_gap_dt": _gap("dt 1e-3 over 0.25 s", "the generalized-α stepper at HHT's setting against Chrono's HHT"),
    "hht_gap_dt2": _gap("dt/2", "the generalized-α stepper at HHT's setting against Chrono's HHT"),
    "hht_ratio": _ratio("gap", (SECOND_ORDER,)),
    "hht_react_gap_dt": _react_gap("dt 1e-3 over 0.25 s", "HHT"),
    "hht_react_gap_dt2": _react_gap("dt/2", "HHT"),
    # goldens and speed (crosscheck/golden.py)
    "golden_qdd": Gate(SCALED, f"the worst stored state's generated qdd {_GOLDEN}"),
    "golden_observe": Gate(SCALED, f"the worst stored state's generated fwd_dyn_observe {_GOLDEN}"),
    "golden_derivatives": Gate(SCALED, f"the worst block at the worst stored state of fwd_dyn_derivs {_GOLDEN}"),
    "flops": Gate("relative change", "relative change in the flop count per fwd_dyn call against the golden: "
                  "flops / golden − 1 (negative: fewer)"),
    "derivatives_flops": Gate("relative change", "relative change in the flop count per fwd_dyn_derivs call "
                              "against the derivatives' golden: flops / golden − 1 (negative: fewer)"),
    "instructions": Gate("relative change", "relative change in the instructions per fwd_dyn call (callgrind) "
                         "against the golden: count / golden − 1; 0 when the golden was counted with another "
                         "toolchain (not compared)"),
    # the tracked models' settle (mechdyn/sim/settle.py)
    "settle_crush": Gate("of the crush depth", "the band's worst penetration over the settle as a fraction of its "
                         "roller's crush depth"),
    **{f"tire_vs_chrono_{t}": Gate("relative", f"mechdyn's {t} tire law against Chrono's own on Chrono's wheel test "
                                   "rig at the rig's states, worst force or moment scaled by the load")
       for t in ("tmeasy", "fiala")},
    "drive_yaw_rate_vs_chrono": Gate("relative", "hmmwv_road's steady yaw rate over its v/R against Chrono::Vehicle's "
                                     "HMMWV's, R 50 m, worst speed"),
    "drive_ay_vs_chrono": Gate("relative", "hmmwv_road's steady lateral acceleration over its v²/R against "
                               "Chrono::Vehicle's HMMWV's, worst speed"),
    "drive_stop_vs_chrono": Gate("relative", "the stopping distance from Chrono's onset speed (mechdyn's scaled by v²) "
                                 "against Chrono::Vehicle's HMMWV's"),
    "drive_lane_vs_chrono": Gate("m", "the lane change's path against Chrono::Vehicle's HMMWV's, largest lateral gap "
                                 "at the same x through the lanes"),
    "drive_roll_vs_chrono": Gate("relative", "the steady roll gradient against Chrono::Vehicle's HMMWV's (linear "
                                 "against cubic springs)"),
    "vehicle_wheel_loads": Gate("relative", "the worst wheel's settled tire load against the rigid-body statics "
                                "(the weight at the cg shared by the contact points' moment balance)"),
    "vehicle_total_load": Gate("relative", "|the tires' settled loads' sum − the weight| / the weight"),
    "vehicle_sinkage": Gate("relative", "the worst tire's settled depth against the depth its vertical law gives "
                            "its load"),
    "vehicle_brake_balance": Gate("of the kinetic energy", "the braking run's largest |E(t) − E(0)|, E kinetic + "
                                  "gravity + springs + the tires' springs + the dissipated work, over the kinetic "
                                  "energy at the brakes' onset"),
    "vehicle_brake_passivity": Gate("J", "the tires' dissipated work's largest fall over the braking run, bounded "
                                    "by what their bristles can store"),
    "vehicle_turn_ay": Gate("relative", "the steady lateral acceleration on the constant-radius turn against v²/R, "
                            "worst speed"),
    "vehicle_understeer": Gate("deg/g", "|the measured understeer gradient − the bicycle model's| (net axle steer "
                               "against lateral acceleration, below 0.25 g)"),
    "vehicle_lane_change": Gate("m", "the cg's largest distance from ISO 3888-1's lane centreline"),
    "vehicle_lane_change_step": Gate("m", "the lane change's cg path at its accuracy step against half the step"),
    "settle_load": Gate("relative", "|mean vertical ground force over the settled window − weight| / weight"),
    "settle_momentum": Gate("of the impulse scale", "|ΔP − M·g·Δt − ΔJ| / (|M·g·Δt| + |ΔJ|) after the ground's "
                            "ramp: momentum against gravity's and the contact's impulse"),
    "settle_energy": Gate("of the KE scale", "the largest single-step rise of energy plus dissipated work after the "
                          "ramp, over the run's largest kinetic energy"),
    "settle_energy_net": Gate("J", "net change of energy plus dissipated work after the ramp: must be a loss "
                              "(threshold 0)"),
    "settle_passivity": Gate("J", "minus the contact's least dissipated work over one step (positive: a force law "
                             "injects energy); threshold 1e-12 of the KE scale"),
    "settle_balance": Gate("of the window's KE", "the complete budget's (the contact's dissipation included) largest "
                           "single-step rise over the settled window, over its largest kinetic energy"),
    "settle_period2": Gate("of the weight", "|mean((−1)^k F_k)| of the ground force over the settled window over "
                           "the weight: a period-2 ringing"),
    # the slope (mechdyn/sim/slope.py, regression/test_hold_gates.py)
    "hold_slip": Gate("m/s", "the loaded shoes' mean tangential slip per second over the last 2 s, parked on 15° "
                      "with the sprockets braked and anchored friction"),
    "hold_control": Gate("ratio", "the hold's bound (5e-4 m/s) over the slip of the regularized-friction control, "
                         "which must slide: below 1 when it did"),
    "release_accel": Gate("m/s²", "|the centre of mass's acceleration down the 45° slope + μ × its acceleration off "
                          "it − g(sin θ − μ cos θ)|; threshold 0.01·g·sin θ"),
}


def unit(name: str) -> str:
    """The unit of the gate called name; KeyError, saying where to define it, if it has no definition."""
    if name not in GATES:
        raise KeyError(f"gate {name!r} has no definition in crosscheck/gates.py (GATES): add its unit and definition "
                       "there, so the history and the report can say what its number is")
    return GATES[name].unit
