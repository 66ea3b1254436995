"""Labor-force paths of the synthetic CPS persons: national conditions by month and a monthly
Markov chain of labor-force states over the 16 months a household is in sample.

Demo data only: the flows are published-CPS-like and carry the relationships the CPS tasks
measure (see `_simulate`); they are not estimates about households.
"""

from __future__ import annotations

import datetime as dt

import numpy as np

from hhx.surveys.synthetic.cps.people import (
    EMP,
    HORIZON,
    NILF,
    NIU,
    UNE,
    _choice,
    _month_index,
)

# --------------------------------------------------------------------------------------------
# Calendar


def _reference_sunday(mi: int) -> dt.date:
    """Sunday starting the CPS reference week (the week containing the 12th)."""
    d = dt.date(mi // 12, mi % 12 + 1, 12)
    return d - dt.timedelta(days=(d.weekday() + 1) % 7)


def _macro_paths(lo: int, hi: int) -> tuple[np.ndarray, np.ndarray]:
    """Per calendar month: separation multiplier and job-finding logit shift (a recession from
    autumn 2008 to 2010, a pandemic shock in spring 2020, a slow cycle otherwise) so that
    national conditions carry information."""
    months = np.arange(lo, hi + 1)
    cycle = np.sin(2 * np.pi * (months - 2000 * 12) / 96.0)
    sep = 1.0 + 0.15 * cycle
    find = 0.15 * cycle
    recession = (months >= _month_index("2008-09")) & (months <= _month_index("2010-06"))
    sep[recession] *= 1.5
    find[recession] -= 0.35
    for text, s_mult, f_shift in (
        ("2020-03", 2.5, -0.3),
        ("2020-04", 9.0, -0.9),
        ("2020-05", 2.0, 0.5),
        ("2020-06", 1.5, 0.5),
        ("2020-07", 1.4, 0.4),
        ("2020-08", 1.3, 0.3),
        ("2020-09", 1.2, 0.1),
        ("2020-10", 1.2, 0.0),
        ("2020-11", 1.1, 0.0),
        ("2020-12", 1.1, 0.0),
    ):
        i = _month_index(text) - lo
        if 0 <= i < len(months):
            sep[i] *= s_mult
            find[i] += f_shift
    return sep, find


# --------------------------------------------------------------------------------------------
# Labor-force paths


def _simulate(
    rng: np.random.Generator,
    pp: dict[str, np.ndarray],
    entry: np.ndarray,
    lo: int,
    sep_path: np.ndarray,
    find_path: np.ndarray,
    ui_extra: np.ndarray | None = None,
    state_of: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Monthly Markov chain over the 16 months from entry (state, EMPSTAT, duration, spell info).

    Relationships the CPS tasks measure: exits from unemployment depend on age, education,
    duration, the reason and kind of search, national conditions and, for job losers
    (WHYUNEMP 1-3), the state's maximum UI weeks (`ui_extra[state, month]` = weeks above 26,
    `state_of[person]` the row of a person's state:
    longer benefits lower job finding); employed persons absent from work (EMPSTAT 12, no hours
    last week) are often on temporary layoff next month; workers from 60 leave for retirement
    at rising rates (more so part-time), so twelve-month retirement is predictable.
    """
    chain = _Chain(rng, pp, entry, lo, len(sep_path))
    chain.start()
    for s in range(1, HORIZON):
        chain.step(s, sep_path, find_path, ui_extra, state_of)
    return {"state": chain.state, "empstat": chain.empstat, "dur": chain.dur, "why": chain.why,
            "wnf": chain.wnf}


class _Chain:
    """The chain's monthly records and the spell state carried from one month to the next."""

    def __init__(self, rng: np.random.Generator, pp: dict[str, np.ndarray], entry: np.ndarray,
                 lo: int, n_months: int):
        n = len(entry)
        self.rng, self.pp, self.entry, self.lo, self.n = rng, pp, entry, lo, n
        self.state = np.zeros((n, HORIZON), dtype=np.int8)
        self.empstat = np.zeros((n, HORIZON), dtype=np.int16)
        self.dur = np.full((n, HORIZON), 999, dtype=np.int16)
        self.why = np.zeros((n, HORIZON), dtype=np.int8)
        self.wnf = np.zeros((n, HORIZON), dtype=np.int8)
        self.nilf_kind = np.zeros(n, dtype=np.int16)
        self.absent = np.zeros((n, HORIZON), dtype=bool)
        self.spell_why = np.zeros(n, dtype=np.int8)
        self.spell_wnf = np.zeros(n, dtype=np.int8)
        self.spell_new = np.zeros(n, dtype=bool)
        self.cur_dur = np.zeros(n, dtype=np.int16)
        self.never = pp["never_worked"].copy()
        self.sunday_weeks = np.array(
            [
                (_reference_sunday(m + 1) - _reference_sunday(m)).days // 7
                for m in range(lo, lo + n_months + 1)
            ],
            dtype=np.int16,
        )

    def start_unemployment(self, mask: np.ndarray, from_state: np.ndarray) -> None:
        rng = self.rng
        k = mask.sum()
        self.cur_dur[mask] = rng.integers(0, 5, k)
        new = mask & self.never
        self.spell_new[mask] = new[mask]
        w = np.where(
            new[mask],
            6,
            np.where(
                from_state[mask] == EMP, _choice(rng, [1, 2, 3, 4], [0.15, 0.50, 0.15, 0.20], k), 5
            ),
        )
        self.spell_why[mask] = w
        wn = np.select(
            [w == 6, w == 5],
            [_choice(rng, [42, 41], [0.7, 0.3], k), _choice(rng, [11, 12, 30], [0.2, 0.5, 0.3], k)],
            _choice(rng, [11, 12], [0.9, 0.1], k),
        )
        self.spell_wnf[mask] = wn

    def set_nilf_kind(self, mask: np.ndarray, age: np.ndarray) -> None:
        k = mask.sum()
        a = age[mask]
        retire_p = np.where(a >= 60, np.clip((a - 55) / 10, 0, 0.95), np.clip((a - 55) / 20, 0, 1))
        r = self.rng.random(k)
        kind = np.where(r < retire_p, 36, np.where(self.pp["disabled"][mask], 32, 34))
        self.nilf_kind[mask] = kind

    def record(self, s: int) -> None:
        st = self.state[:, s]
        self.absent[:, s] = (st == EMP) & (self.rng.random(self.n) < 0.02)
        self.empstat[:, s] = np.select(
            [st == EMP, (st == UNE) & self.spell_new, st == UNE, st == NILF],
            [np.where(self.absent[:, s], 12, 10), 22, 21, self.nilf_kind],
            0,
        )
        u = st == UNE
        self.dur[u, s] = self.cur_dur[u]
        self.why[u, s] = self.spell_why[u]
        self.wnf[u, s] = self.spell_wnf[u]

    def start(self) -> None:
        """The entry month's states."""
        rng, pp, n, level = self.rng, self.pp, self.n, self.pp["level"]
        age = (pp["age0"]).astype(int)
        adult = age >= 15
        p_emp = np.select(
            [age < 18, age < 20, age < 25, age < 55, age < 62, age < 65, age < 70, age < 75],
            [
                0.18,
                0.45,
                0.68,
                0.80 + 0.03 * (level - 2) - 0.07 * (pp["sex"] == 2),
                0.66,
                0.50,
                0.30,
                0.18,
            ],
            0.07,
        )
        p_emp = np.where(pp["disabled"], p_emp * 0.3, p_emp)
        ur = (
            0.045
            * np.where(age < 25, 2.0, 1.0)
            * np.where(level == 0, 1.5, np.where(level >= 3, 0.6, 1.0))
        )
        p_une = p_emp * ur / (1 - ur)
        r = rng.random(n)
        s0 = np.where(~adult, NIU, np.where(r < p_emp, EMP, np.where(r < p_emp + p_une, UNE, NILF)))
        self.state[:, 0] = s0
        self.never[s0 == EMP] = False
        self.start_unemployment(s0 == UNE, np.where(rng.random(n) < 0.6, EMP, NILF))
        long = (s0 == UNE) & (rng.random(n) < 0.45)
        self.cur_dur[long] = np.minimum(15 + rng.exponential(30, long.sum()), 119).astype(np.int16)
        self.set_nilf_kind(s0 == NILF, age)
        self.record(0)

    def step(self, s: int, sep_path: np.ndarray, find_path: np.ndarray,
             ui_extra: np.ndarray | None, state_of: np.ndarray | None) -> None:
        """Month `s` after entry from month `s - 1`."""
        pp = self.pp
        m = self.entry + s - self.lo  # calendar month of this slot, as index into the macro paths
        age = (pp["age0"] + s / 12.0).astype(int)
        prev = self.state[:, s - 1]
        r = self.rng.random(self.n)
        nxt = prev.copy()
        # children reaching 15 enter the population as not in the labor force
        grown = (prev == NIU) & (age >= 15)
        nxt[grown] = NILF
        self.set_nilf_kind(grown, age)
        # employed
        e = prev == EMP
        was_absent = self.absent[:, s - 1]  # absent from work last month
        p_eu, p_en = _employed_exits(age, pp["level"], pp["pt"], sep_path[m], was_absent)
        to_u = e & (r < p_eu)
        to_n = e & ~to_u & (r < p_eu + p_en)
        # unemployed: multinomial logit against staying unemployed
        u = prev == UNE
        s_e, s_n = self._unemployed_scores(age, find_path[m])
        if ui_extra is not None and state_of is not None:
            # longer potential benefits, later job finding (job losers only)
            loser = np.isin(self.spell_why, [1, 2, 3])
            s_e = s_e - np.where(loser, 0.012 * ui_extra[state_of, m], 0)
        denom = 1 + np.exp(s_e) + np.exp(s_n)
        p_ue, p_un = np.exp(s_e) / denom, np.exp(s_n) / denom
        u_to_e = u & (r < p_ue)
        u_to_n = u & ~u_to_e & (r < p_ue + p_un)
        # not in the labor force
        nl = prev == NILF
        p_ne, p_nu = _nilf_entries(age, self.nilf_kind)
        n_to_e = nl & (r < p_ne)
        n_to_u = nl & ~n_to_e & (r < p_ne + p_nu)

        nxt[to_u | n_to_u] = UNE
        nxt[to_n | u_to_n] = NILF
        nxt[u_to_e | n_to_e] = EMP
        stay_u = u & (nxt == UNE)
        self.cur_dur[stay_u] = np.minimum(
            self.cur_dur[stay_u] + self.sunday_weeks[m[stay_u] - 1], 119)
        self.start_unemployment(to_u | n_to_u, prev)
        self.spell_why[to_u & was_absent] = 1  # temporary layoff
        self.set_nilf_kind(to_n | u_to_n, age)
        self.never[nxt == EMP] = False
        self.state[:, s] = nxt
        self.record(s)

    def _unemployed_scores(self, age: np.ndarray, find: np.ndarray
                           ) -> tuple[np.ndarray, np.ndarray]:
        """Logit scores of finding a job and of leaving the labor force (vs staying)."""
        level, z = self.pp["level"], self.pp["z"]
        d = self.cur_dur.astype(float)
        spell_why, spell_wnf = self.spell_why, self.spell_wnf
        # Coefficients are large enough that age, education, duration, the reason for the
        # spell and the kind of job search predict the outcome (a model can learn something),
        # while the aggregate flows stay near the published CPS shares.
        s_e = (
            -0.60
            + 0.35 * (level - 1.5)
            - 0.70 * np.log1p(d / 4)
            + 0.60 * ((age >= 25) & (age < 55))
            - 0.70 * (age >= 55)
            + 0.80 * (spell_why == 1)
            + find
            + z
        )
        s_n = (
            -1.80
            + 1.40 * (age < 20)
            + 0.60 * ((age >= 20) & (age < 25))
            + 1.60 * (age >= 60)
            + 0.40 * np.log1p(d / 4)
            - 0.25 * (level - 1.5)
            + 1.00 * np.isin(spell_wnf, [30, 41, 42])
            + 0.50 * (spell_why == 5)
            - 0.5 * z
        )
        return s_e, s_n


def _employed_exits(age: np.ndarray, level: np.ndarray, pt: np.ndarray, sep: np.ndarray,
                    was_absent: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities of an employed person becoming unemployed / leaving the labor force."""
    p_eu = (
        0.011
        * np.where(level == 0, 1.6, np.where(level >= 3, 0.6, 1.0))
        * np.where(age < 25, 1.8, 1.0)
        * sep
    )
    p_en = np.where(age < 22, 0.06, 0.02) + np.where(
        age >= 55, np.clip(0.01 + 0.006 * (age - 55), 0, 0.15), 0
    )
    p_en = p_en + np.where(age >= 60, 0.012 * (age - 60) + 0.04 * pt, 0)
    # absent from work last month: often a temporary layoff now
    # (strong enough that zero hours last week predict unemployment next month)
    p_eu = np.where(was_absent, 0.65, p_eu)
    p_en = np.where(was_absent, 0.15, p_en)
    return p_eu, p_en


def _nilf_entries(age: np.ndarray, nilf_kind: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Probabilities of a person out of the labor force finding a job / starting to search."""
    p_ne = np.select(
        [age < 20, age < 25, age < 55, age < 65], [0.06, 0.05, 0.035, 0.012], 0.005
    )
    p_ne = np.where(np.isin(nilf_kind, [32, 36]), p_ne * 0.3, p_ne)
    p_nu = np.select([age < 25, age < 55, age < 65], [0.03, 0.018, 0.008], 0.002)
    p_nu = np.where(np.isin(nilf_kind, [32, 36]), p_nu * 0.3, p_nu)
    return p_ne, p_nu
