"""cfn-lint in-process: what ``cfn-lint --non-zero-exit-code error <templates>`` fails on, without a subprocess.

One call lints every template of an assembly with one rule load (cfn-lint's public API, ``cfnlint.api``). The rules
are cfn-lint's defaults, as on the command line (a ``.cfnlintrc`` is read the same way); only matches of severity
``error`` are returned, the threshold of ``--non-zero-exit-code error`` (warnings such as W3005 on CDK's own
DependsOn do not fail).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from cfnlint.api import ManualArgs, lint_by_config


def cfn_lint_errors(templates: Iterable[Path | str]) -> list[str]:
    """The error-level cfn-lint findings of ``templates``, one line each (``[]``: clean)."""
    files = [str(p) for p in templates]
    assert files, "no template to lint"
    matches = lint_by_config(ManualArgs(templates=files))
    return [f"{m.rule.id} {m.message} ({m.filename}:{m.linenumber})" for m in matches if m.rule.severity == "error"]
