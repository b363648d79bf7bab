"""``doctor``'s runner and its one output format: the families it runs (listed here, in the order they run and print),
the selection ``--only`` makes, the exit status and the table.

"Nothing could be checked" is never a pass: a skipped :data:`REQUIRED_CHECKS` result (no credentials, an expired
session, access denied on the identity call or the cluster descriptions), or a run whose every result skipped, exits
:data:`EXIT_INCOMPLETE` (:func:`exit_status`).
"""

from __future__ import annotations

from collections.abc import Iterable

from ..aws import Skip
from . import account, capture, cluster, domain, kubernetes, model, operator
from .base import FAIL, PASS, SKIP, WARN, Check, Context, Family, Result

#: Every family of checks, in the order they run: a new family is a module with a :class:`~.base.Family` named
#: ``FAMILY``, added here.
FAMILIES: tuple[Family, ...] = (account.FAMILY, cluster.FAMILY, kubernetes.FAMILY, operator.FAMILY, capture.FAMILY,
                                domain.FAMILY, model.FAMILY)
CHECKS: tuple[Check, ...] = tuple(c for family in FAMILIES for c in family.checks)
CHECK_IDS: tuple[str, ...] = tuple(c.id for c in CHECKS)
if len(set(CHECK_IDS)) != len(CHECK_IDS):
    raise ValueError(f"a check is registered in two families: {sorted(i for i in CHECK_IDS if CHECK_IDS.count(i) > 1)}")
#: The checks without which doctor's answer means nothing: when one skips (it could not run), the run exits
#: EXIT_INCOMPLETE, whatever else passed.
REQUIRED_CHECKS = ("identity.account", "cluster.hyperpod", "cluster.eks")
#: doctor's exit statuses (documented in docs/troubleshooting.md and ``doctor --help``).
EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INCOMPLETE = 0, 1, 2, 3


def _named(check: Check, name: str) -> bool:
    """Whether ``--only`` name ``name`` selects ``check``: its ID, a prefix of its ID (``operator.dependency``), or
    its family (``kubernetes``)."""
    return check.id == name or check.id.startswith(name + ".") or check.family == name


def selected(only: Iterable[str] | None) -> list[Check]:
    """The checks ``only`` names (an ID, a prefix such as ``operator``, or a family such as ``kubernetes``);
    ValueError for a name that selects none."""
    if not only:
        return list(CHECKS)
    wanted = [w.strip() for w in only if w.strip()]
    unknown = [w for w in wanted if not any(_named(c, w) for c in CHECKS)]
    if unknown:
        families = ", ".join(f.name for f in FAMILIES if f.checks)
        raise ValueError(f"no check {', '.join(unknown)}; the checks: {', '.join(CHECK_IDS)} (the families: "
                         f"{families})")
    return [c for c in CHECKS if any(_named(c, w) for w in wanted)]


def run(ctx: Context, only: Iterable[str] | None = None) -> list[Result]:
    results: list[Result] = []
    for chk in selected(only):
        try:
            results.extend(chk.run(ctx))
        except Skip as skip:
            results.append(Result(chk.id, SKIP, chk.resource(ctx), skip.reason))
    return results


def incomplete(results: list[Result]) -> list[Result]:
    """The skipped results that make the run say nothing: those of REQUIRED_CHECKS, or every result when all skipped."""
    skipped = [r for r in results if r.status == SKIP]
    if results and len(skipped) == len(results):
        return skipped
    return [r for r in skipped if r.check in REQUIRED_CHECKS]


def exit_status(results: list[Result]) -> int:
    """EXIT_INCOMPLETE when a required check could not run (or nothing could), else EXIT_FAILED when a check failed,
    else EXIT_OK."""
    if incomplete(results):
        return EXIT_INCOMPLETE
    return EXIT_FAILED if any(r.status == FAIL for r in results) else EXIT_OK


def render(results: list[Result]) -> str:
    lines = []
    for r in results:
        lines.append(f"{r.status.upper():4}  {r.check:34} {r.resource}: {r.detail}")
        if r.fix and r.status != PASS:
            lines.append(f"{'':40} fix: {r.fix}")
    counts = {s: sum(r.status == s for r in results) for s in (PASS, WARN, FAIL, SKIP)}
    lines.append(", ".join(f"{n} {s}" for s, n in counts.items()))
    return "\n".join(lines) + "\n"
