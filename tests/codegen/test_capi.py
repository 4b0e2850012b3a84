"""The generated C API declared once (mechdyn/codegen/capi.py): the emitted definitions and cffi's declarations
are the table's, and a table entry that disagrees with the code it declares does not compile."""
import dataclasses

import cffi
import pytest

import mechdyn
from mechdyn.codegen import capi
from mechdyn.codegen.build import BuildError, build
from mechdyn.codegen.generate import generate
from mechdyn.core.parse import load_model

# a tree, a floating body, a loop model, a damped model with act slots and fext, POIs and TSDAs
MODELS = ["gantry", "satellite", "fourbar", "springpend", "elbow"]


@pytest.mark.parametrize("name", MODELS)
def test_emitted_definitions_are_the_tables(name):
    """Every exported function and constant defined in the emitted C, read back from its text, is the table's
    (name, return type, parameters; name and type), and nothing else is exported: no benchmark loop."""
    src = generate(load_model(name)).source
    funcs, consts = capi.exported(src)
    assert funcs == {f.name: (f.returns, f.params) for f in capi.FUNCTIONS}
    assert consts == {c.name: c.type for c in capi.CONSTANTS}
    assert "fwd_dyn_bench" not in src and "<time.h>" not in src
    for f in capi.FUNCTIONS:  # each header exactly as the table lays it out, the body's brace after it
        assert f.header() + "\n{\n" in src


def test_cffi_declarations_are_the_tables():
    """The compiled module's functions and constants have the table's C types, and it exports no other name."""
    module, _ = build(load_model("elbow"))
    ffi, lib = module.ffi, module.lib
    assert set(dir(lib)) == {x.name for x in (*capi.FUNCTIONS, *capi.CONSTANTS)}
    for f in capi.FUNCTIONS:
        assert ffi.typeof(getattr(lib, f.name)) == ffi.typeof(f"{f.returns}(*)({', '.join(f.params)})"), f.name
    model = load_model("elbow")
    assert (lib.fwd_dyn_nq, lib.fwd_dyn_nv, lib.fwd_dyn_nact, lib.fwd_dyn_nbody) == (model.nq, model.nv, model.nact,
                                                                                    model.nbody)
    assert capi.CDEF.count(";  /* ") == len(capi.FUNCTIONS) + len(capi.CONSTANTS)  # one declaration each


def test_planted_read_only_output_in_the_table_fails_the_compiler(tmp_path, monkeypatch):
    """A table entry with a wrong parameter type reaches the emitted definition, whose body the compiler checks
    against it: fwd_dyn's qdd declared `const double *` fails the build, since the body writes qdd."""
    monkeypatch.setenv("MECHDYN_CACHE", str(tmp_path))
    f = capi.FUNCTION["fwd_dyn"]
    monkeypatch.setitem(capi.FUNCTION, "fwd_dyn", dataclasses.replace(f, params=(*f.params[:-1], "const double *qdd")))
    with pytest.raises(BuildError, match="read-only"):
        mechdyn.load("gantry")


@pytest.mark.parametrize("wrong, right", [("double *obs", "float *obs"), ("long *done", "int *done")])
def test_planted_cdef_mismatch_fails_the_compiler(tmp_path, capfd, wrong, right):
    """Were cffi's declarations written apart from the definitions, a wrong pointer parameter would be caught
    only as a compiler diagnostic (a warning, by default): a cdef with one type changed, against the real
    translation unit, fails under -Werror=incompatible-pointer-types. With one table the two cannot differ."""
    assert wrong in capi.CDEF
    ffi = cffi.FFI()
    ffi.cdef(capi.CDEF.replace(wrong, right))
    ffi.set_source("_planted_cdef", generate(load_model("gantry")).source,
                   extra_compile_args=["-Werror=incompatible-pointer-types"])
    with pytest.raises(cffi.VerificationError, match="failed"):
        ffi.compile(tmpdir=str(tmp_path))
    assert "error: " in (err := capfd.readouterr().err) and "incompatible pointer type" in err


@pytest.mark.parametrize("name", ["gantry", "satellite", "fourbar", "springpend", "quartercar"])
def test_derivatives_unit_defines_the_derivative_table(name):
    """The derivatives' translation unit (whole, or in its parts for a long one: quartercar's is staged) defines
    exactly the derivative table's functions and constants, each header as the table lays it out."""
    from mechdyn.codegen.generate import derivatives_unit

    gen = derivatives_unit(load_model(name))
    assert (gen.parts > 1) == (name == "quartercar")
    funcs, consts = capi.exported(gen.source)
    assert funcs == {f.name: (f.returns, f.params) for f in capi.DERIV_FUNCTIONS}
    assert consts == {c.name: c.type for c in capi.DERIV_CONSTANTS}
    for f in capi.DERIV_FUNCTIONS:
        assert f.header() + "\n{\n" in gen.source


def test_derivatives_module_declarations_are_the_table():
    """The compiled derivatives module exports the derivative table's names with its C types, and no other."""
    module, _ = build(load_model("springpend"), unit="derivatives")
    ffi, lib = module.ffi, module.lib
    assert set(dir(lib)) == {x.name for x in (*capi.DERIV_FUNCTIONS, *capi.DERIV_CONSTANTS)}
    for f in capi.DERIV_FUNCTIONS:
        assert ffi.typeof(getattr(lib, f.name)) == ffi.typeof(f"{f.returns}(*)({', '.join(f.params)})"), f.name
    assert capi.DERIV_CDEF.count(";  /* ") == len(capi.DERIV_FUNCTIONS) + len(capi.DERIV_CONSTANTS)


def test_address_reaches_both_modules():
    """Dynamics.address gives a dynamics function from the model's module and a derivative function from the
    derivatives' (built on first use), and refuses any other name, listing both tables."""
    dyn = mechdyn.load("springpend")
    assert dyn.address("fwd_dyn") and dyn.address("fwd_dyn_derivs") and dyn.address("fwd_dyn_derivs_batch")
    with pytest.raises(ValueError, match="fwd_dyn_derivs_batch"):
        dyn.address("fwd_dyn_nothing")
