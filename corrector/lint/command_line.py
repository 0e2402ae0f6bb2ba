"""``python -m corrector lint [PATH...]``: report likely slips in files and folders (see ``corrector/lint``).

    python -m corrector lint                                 # every file of a kind that is read, here and below
    python -m corrector lint docs README.md --format sarif > csc.sarif
    python -m corrector lint docs --fix                      # write the confident fixes; --diff shows them instead
    python -m corrector lint thesis.docx --review reviewed.docx   # a copy with tracked changes and comments
    git diff --name-only | python -m corrector lint --changed-since origin/main
    cat page.md | python -m corrector lint - --stdin-filename page.md

Exit status, in every format: 0 nothing found, 1 findings, 2 a usage, configuration, file or model error (one line
on stderr), 3 a file left out for its size (a warning line on stderr; name the file to read it).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, NoReturn

from .check import Checked, Correct, check, corrector_pass, whole_words
from .document import DocumentError
from .extract import DOCUMENT_MODULES, kind_of
from .project_config import ConfigError, find_config
from .remote import RemoteError
from .report import FORMATS, render
from .walk import Target, WalkError, changed_since, max_bytes, targets

EXTRA_MODULES = {"markdown_it", "mdit_py_plugins", "linkify_it", "pygments", "pathspec", "tomli"}


class LintError(Exception):
    """Exit status 2, with one line on stderr."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="python -m corrector lint", description=__doc__,
                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("paths", nargs="*", type=Path, default=[Path(".")], help="files and folders (default: .); - reads "
                    "stdin")
    ap.add_argument("--format", choices=FORMATS, default="text", help="output format (default text)")
    ap.add_argument("--output", type=Path, help="write the report here instead of stdout")
    ap.add_argument("--threshold", type=float, metavar="P", help="report edits at or above this confidence "
                    "(default: the configuration's threshold, else the bundle's)")
    ap.add_argument("--min-confidence", type=float, metavar="P", help="the old name of --threshold (still read)")
    ap.add_argument("--fix-confidence", type=float, metavar="P", help="--fix writes edits at or above this confidence "
                    "(default: the configuration's fix, else 0.9)")
    fix = ap.add_mutually_exclusive_group()
    fix.add_argument("--fix", action="store_true", help="write the fixes at or above the fix confidence into the files")
    fix.add_argument("--diff", action="store_true", help="print those fixes as a unified diff; change nothing")
    fix.add_argument("--review", type=Path, metavar="OUT.docx", help="with one Word document: write a copy of it to "
                     "OUT.docx in which each fix is a tracked change and each finding below the fix confidence a "
                     "comment")
    ap.add_argument("--config", type=Path, help="the configuration file (default: .electra-csc.toml or "
                    "pyproject.toml's [tool.electra-csc], found from the first path up)")
    ap.add_argument("--exclude", action="append", default=[], metavar="GLOB", help="skip files matching this "
                    "gitignore-style pattern (repeatable; added to the configuration's)")
    ap.add_argument("--force-exclude", action="store_true", help="exclude even the files named on the command line")
    ap.add_argument("--stdin-filename", help="with -: the name that says what kind of text stdin holds")
    ap.add_argument("--changed-since", metavar="REF", help="only the files changed since this git revision")
    ap.add_argument("--baseline", type=Path, help="do not report the findings recorded in this file")
    ap.add_argument("--update-baseline", action="store_true", help="with --baseline: record today's findings there")
    ap.add_argument("--model", help="bundle directory (default: the configuration's, else the shipped one)")
    ap.add_argument("--server", metavar="URL", help="correct through a running service instead of loading the model")
    ap.add_argument("--no-cache", action="store_true", help="neither read nor write the findings cache")
    ap.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    ap.add_argument("--no-progress", action="store_true", help="no progress bar on stderr")
    return ap


def main(argv: list[str]) -> int:
    args = parser().parse_args(argv)
    try:
        return _run(args)
    except (LintError, ConfigError, WalkError, DocumentError, RemoteError) as e:
        sys.stderr.write(f"error: {e}\n")
        return 2
    except ModuleNotFoundError as e:
        if e.name not in EXTRA_MODULES | DOCUMENT_MODULES:
            raise
        from corrector.model_path import missing_extra

        if e.name in DOCUMENT_MODULES:  # --review
            sys.stderr.write(f"error: {missing_extra(e, 'reviewing a Word document', 'documents')}\n")
        else:
            sys.stderr.write(f"error: {missing_extra(e, 'lint', 'lint')}\n")
        return 2


def _confidence(value: float | None, flag: str) -> float | None:
    if value is not None and not 0 <= value <= 1:
        raise LintError(f"{flag} must be between 0 and 1, got {value:g}")
    return value


def _run(args: argparse.Namespace) -> int:
    if args.threshold is not None and args.min_confidence is not None:
        raise LintError("--min-confidence is the old name of --threshold: give --threshold alone")
    report = _confidence(args.threshold, "--threshold") if args.min_confidence is None else \
        _confidence(args.min_confidence, "--min-confidence")
    fix_at = _confidence(args.fix_confidence, "--fix-confidence")
    stdin = [p for p in args.paths if str(p) == "-"]
    if stdin and (len(args.paths) > 1 or args.fix):
        raise LintError("- (stdin) is checked alone, and cannot be fixed")
    if args.update_baseline and args.baseline is None:
        raise LintError("--update-baseline needs --baseline FILE")
    if args.review is not None and (len(args.paths) != 1 or kind_of(args.paths[0].name) != "word"
                                    or not args.paths[0].is_file()):
        raise LintError("--review needs one Word document (.docx) to read")
    if args.review is not None and args.review.resolve() == args.paths[0].resolve():
        raise LintError("--review writes a copy: give it another file name than the document's")
    first = Path(".") if stdin else args.paths[0]
    config = find_config(first, args.config)
    if stdin:
        name = args.stdin_filename or "stdin.txt"
        kind = kind_of(name)
        if kind is None:
            raise LintError(f"--stdin-filename {name}: not a kind of file that is read")
        found, too_large = [Target(Path("-"), args.stdin_filename or "-", name, kind)], []
    else:
        changed = changed_since(args.changed_since, Path.cwd()) if args.changed_since else None
        walked = targets(args.paths, config.root, config.include, (*config.exclude, *args.exclude),
                         args.force_exclude, changed)
        found, too_large = walked.targets, walked.too_large
    model = args.model or config.model
    bundle = _bundle_path(model) if not args.server else None
    cache = None
    if not args.no_cache and not stdin:
        from corrector.runtime.user_cache import private_dir

        from .cache import FOLDER, Cache, bundle_fingerprint

        folder = config.root / FOLDER if config.project else private_dir("lint")
        if folder is not None:
            cache = Cache(folder, bundle_fingerprint(bundle) if bundle else f"server {args.server}")
    progress = not args.no_progress and sys.stderr.isatty()
    checked = check(found, config, lambda: _corrector(args.server, bundle), report=report, cache=cache,
                    progress=progress)
    if cache is not None:
        cache.save()
    for line in checked.errors:
        sys.stderr.write(f"error: {line}\n")
    for shown in too_large:
        sys.stderr.write(f"warning: {shown}: not read: over {max_bytes(kind_of(shown)) // 1_000_000} MB (name it to "
                         "read it)\n")
    findings = checked.findings
    if fix_at is not None:
        findings = whole_words([replace(f, fix=f.confidence >= fix_at) for f in findings])
    if args.baseline is not None:
        findings = _baseline(args.baseline, findings, args.update_baseline)
    if args.review is not None:
        _review(args.paths[0], args.review, findings)
    if args.fix or args.diff:
        from .fix import apply

        kept = [f for f in findings if f.fix and checked.documents[f.path].container]
        for shown in sorted({f.path.split("!/")[0] for f in kept}):
            what = ("a Word document; --review OUT.docx writes a copy with the fixes as tracked changes"
                    if kind_of(shown) == "word" else "a book")
            sys.stderr.write(f"{shown}: not fixed in place ({what})\n")
        fixable = [f for f in findings if not checked.documents[f.path].container]
        done = apply(fixable, {t.shown: t.path for t in found}, write=args.fix)
        for f in done.stale:
            sys.stderr.write(f"{f.path}:{f.line}:{f.column}: not fixed: the file changed since it was read\n")
        if args.diff:
            sys.stdout.write(done.diff)
            return _status(checked, too_large, bool(done.fixed))
        made = {id(f) for f in done.fixed}
        findings = [f for f in findings if id(f) not in made]
        sys.stderr.write(f"fixed {len(done.fixed)} of {len(done.fixed) + len(findings)}\n")
    _emit(args, findings, checked, model)
    return _status(checked, too_large, bool(findings))


def _review(document: Path, out: Path, findings: list[Any]) -> None:
    from .word_review import review

    try:
        done = review(document.read_bytes(), findings, out)
    except OSError as e:
        raise LintError(f"--review {out}: {e.strerror or e}") from None
    for f, why in done.left:
        sys.stderr.write(f"{f.path}:{f.line}:{f.column}: not marked in the review: {why}\n")
    sys.stderr.write(f"wrote {out}: {done.changes} tracked change{'s' if done.changes != 1 else ''}, {done.comments} "
                     f"comment{'s' if done.comments != 1 else ''}\n")


def _status(checked: Checked, too_large: list[str], found: bool) -> int:
    """2: a file could not be read; 3: a file was left out for its size; 1: something was found; 0: nothing."""
    return 2 if checked.errors else 3 if too_large else 1 if found else 0


def _emit(args: argparse.Namespace, findings: list[Any], checked: Checked, model: str | None) -> None:
    from corrector.model_path import installed_version

    color = args.color == "always" or (args.color == "auto" and args.output is None and sys.stdout.isatty()
                                       and "NO_COLOR" not in os.environ)
    # (importlib.metadata is slow to import: the version is looked up only for the formats that say it)
    version = (installed_version() or "0+checkout") if args.format in ("json", "sarif") else ""
    text = render(args.format, findings, version=version, model=str(model or "default"), color=color,
                  files=checked.files)
    if args.output is not None:
        args.output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)


def _bundle_path(model: str | None) -> Path:
    from corrector import CorrectorError
    from corrector.model_path import default_model_path

    try:
        path = Path(model) if model else default_model_path()
    except CorrectorError as e:
        raise LintError(str(e)) from None
    if not (path / "manifest.json").is_file():
        raise LintError(f"no model bundle at {path} (no manifest.json)")
    return path


def _corrector(server: str | None, bundle: Path | None) -> Correct:
    """The corrector's pass, loaded now (only when some file must be corrected)."""
    if server:
        from .remote import remote_pass

        return remote_pass(server)
    from corrector import Corrector, CorrectorError

    try:
        return corrector_pass(Corrector.load(bundle))
    except (CorrectorError, OSError) as e:
        raise LintError(f"cannot load the model: {e}") from None


def _baseline(path: Path, findings: list[Any], update: bool) -> list[Any]:
    """Findings not in the baseline file (``update``: write today's findings there, and report none of them)."""
    if update:
        rows = sorted({(f.path, f.fingerprint) for f in findings})
        path.write_text(json.dumps({"tool": "electra-csc", "findings": [{"path": p, "fingerprint": h} for p, h in rows]},
                                   ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        return []
    try:
        known = {(r["path"], r["fingerprint"]) for r in json.loads(path.read_text(encoding="utf-8"))["findings"]}
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise LintError(f"--baseline {path}: not a baseline file ({e})") from None
    return [f for f in findings if (f.path, f.fingerprint) not in known]
