"""Frequency response from the drivers' motion (base excitation): H(jω) of any output per unit of driver motion.

About a static equilibrium q* (drivers at rest), a driver input u(t) (the drivers moved together, each by its
sign s_d times u) perturbs the state as δ = N z + g u, where N spans the tangent space of the loops with the
driven coordinates fixed (linearize's N) and g is the minimum-norm tangent motion that moves the drivers by s
and keeps the loops closed ([K; E] g = [0; s]; g ⟂ N). The free coordinates z obey

    z̈ = Ar_z z + Ar_ż ż + B_u u + B_v u̇ + B_a ü,   B_u = P dq g,  B_v = P dqd g,  B_a = P dact s

with dq, dqd and dact the generated derivatives (the driven coordinates' act slots carry their accelerations, so
dact's columns are the response to ü) and P the reduced system's projection (P g = 0). So, per unit u,

    Z(jω) = (−ω² I − jω Ar_ż − Ar_z)⁻¹ (B_u + jω B_v − ω² B_a)

and an output y(q, qd, act) responds as y = Y_δ δ + Y_v δ̇ + Y_a ü, its three maps taken by central differences
of the output along N's columns and g (the outputs are kinematic, element forces and the drivers' reactions; the
dynamics' own derivatives are the generated ones).
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import scipy.linalg

from mechdyn.core.integrate import retract
from mechdyn.core.loops import closure
from mechdyn.dynamics import Dynamics

from .linearization import Linear, linearize

Output = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]  # y(q, qd, act)
STEP = 1e-6  # m or rad (and per s, per s²): the central differences' step along each direction


@dataclass(frozen=True)
class BaseExcitation:
    """The reduced system about q* driven by u: z̈ = Az z + Av ż + Bu u + Bv u̇ + Ba ü, δ = N z + g u."""
    lin: Linear
    signs: np.ndarray  # (ndriver,) each driver's share of u
    g: np.ndarray  # (nv,)
    Az: np.ndarray
    Av: np.ndarray
    Bu: np.ndarray
    Bv: np.ndarray
    Ba: np.ndarray

    def response(self, omega: np.ndarray) -> np.ndarray:
        """Z(jω) per unit u: (len(omega), m) complex."""
        m = self.Az.shape[0]
        out = np.empty((len(omega), m), dtype=complex)
        for k, w in enumerate(omega):
            A = -w * w * np.eye(m) - 1j * w * self.Av - self.Az
            out[k] = scipy.linalg.solve(A, self.Bu + 1j * w * self.Bv - w * w * self.Ba)
        return out


def base_excitation(dyn: Dynamics, q: np.ndarray, signs: dict[str, float]) -> BaseExcitation:
    """The base-excitation system about the equilibrium q (every driver at rest), u moving each named driver by
    its sign (the others held)."""
    model = dyn.model
    s = np.zeros(len(model.drivers))
    for name, v in signs.items():
        s[model.driver_index(name)] = v
    zero = np.zeros(model.nv)
    lin = linearize(dyn, q, zero)
    D, N, P = lin.derivatives, lin.N, lin.P
    E = np.eye(model.nv)[list(model.driven)]
    rows = np.vstack([closure(model, q)[1], E]) if model.loops else E
    rhs = np.concatenate([np.zeros(rows.shape[0] - len(s)), s])
    g = scipy.linalg.lstsq(rows, rhs, cond=1e-12)[0]
    m = N.shape[1]
    acts = [d.act for d in model.drivers]
    Ba = P @ (D.dact[:, acts] @ s)
    return BaseExcitation(lin, s, g, lin.Ar[m:, :m], lin.Ar[m:, m:], P @ D.dq @ g, P @ D.dqd @ g, Ba)


def output_maps(dyn: Dynamics, be: BaseExcitation, y: Output) -> tuple[np.ndarray, ...]:
    """(Y_z, Y_u, Y_zd, Y_ud, Y_a): y's derivatives along each free coordinate, along u, along their rates and
    along ü, by central differences of y at the equilibrium (STEP)."""
    model, lin = dyn.model, be.lin
    q, zero = lin.q, np.zeros(model.nv)
    act = np.zeros(model.nact)
    acts = [d.act for d in model.drivers]

    def along_q(dq: np.ndarray) -> np.ndarray:
        return (y(retract(model, q, STEP * dq), zero, act) - y(retract(model, q, -STEP * dq), zero, act)) / (2 * STEP)

    def along_v(dv: np.ndarray) -> np.ndarray:
        return (y(q, STEP * dv, act) - y(q, -STEP * dv, act)) / (2 * STEP)

    da = np.zeros(model.nact)
    da[acts] = be.signs
    Ya = (y(q, zero, act + STEP * da) - y(q, zero, act - STEP * da)) / (2 * STEP)
    N = lin.N
    Yz = np.column_stack([along_q(N[:, i]) for i in range(N.shape[1])])
    Yzd = np.column_stack([along_v(N[:, i]) for i in range(N.shape[1])])
    return Yz, along_q(be.g), Yzd, along_v(be.g), Ya


def frequency_response(dyn: Dynamics, be: BaseExcitation, y: Output, freq: np.ndarray) -> np.ndarray:
    """y's response per unit u at each frequency (Hz): (len(freq), len(y)) complex."""
    w = 2 * np.pi * np.asarray(freq, dtype=float)
    Z = be.response(w)
    Yz, Yu, Yzd, Yud, Ya = output_maps(dyn, be, y)
    jw = 1j * w[:, None]
    return Z @ Yz.T + Yu[None] + jw * (Z @ Yzd.T + Yud[None]) - (w * w)[:, None] * Ya[None]
