"""``python -m corrector``: a thin printer over ``Corrector.correct_batch``.

    python -m corrector "今天天汽很好"              # prints the corrected text
    python -m corrector --input in.txt --output out.txt --json
    cat in.txt | python -m corrector --protect 张三,李四   # lines from stdin; --protect repeats or takes commas
    python -m corrector --set top_k=10 "..."       # any decoding setting
    python -m corrector similar 己                  # sound and shape neighbours
    python -m corrector batch --input corpus.txt --output out/   # corrector/batch/: a corpus, locally or on Ray
    python -m corrector settings                    # every decoding setting, with the value in force
    python -m corrector serve --port 8000           # the HTTP service (the 'service' extra)
    python -m corrector adapt --text docs/ --out runs/docs   # a bundle adapted to a domain's plain text
    python -m corrector lint docs/ README.md        # likely slips in files, with line and column (corrector/lint/)
    python -m corrector lsp                         # the same in an editor: a language server on stdio

Turning a Hugging Face ELECTRA pair into a bundle is a training command: ``python -m training.bundle.export --hf``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from corrector.cli.options import (
    CliError,
    decoding_args,
    decoding_settings,
    in_force_for,
    model_args,
    read_text,
)
from corrector.text.chars import is_cjk
from corrector.types import EXPLAIN_COLUMNS, CorrectorError

BATCH_LINES = 256


def correct_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="python -m corrector",
        description="Correct Chinese spelling errors. Other commands: 'similar CHAR' (sound and shape "
                    "neighbours), 'batch --input PATH --output DIR' (a corpus, locally or on Ray), 'settings' (every "
                    "decoding setting with the value in force), 'serve' (the HTTP service; serve --help), 'adapt --text "
                    "PATH --out DIR' (a bundle adapted to a domain's plain text; adapt --help), 'lint [PATH...]' (likely slips in files "
                    "and folders, with line and column; lint --help), 'lsp' (the same as a language server on stdio, for editors).",
        epilog=EXAMPLES + "\n" + EXPLAIN_HELP, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ap.add_argument("--version", action=_Version, nargs=0, help="print the installed version and exit")
    ap.add_argument("text", nargs="?", help="text to correct; '-' reads lines from stdin (so does a pipe, with no "
                                            "text and no --input)")
    ap.add_argument("--input", "-i", help="file with one text per line, or '-' for stdin")
    ap.add_argument("--output", "-o", help="write results here instead of stdout")
    ap.add_argument("--json", action="store_true", help="JSON lines: source, target, edits")
    ap.add_argument("--explain", action="store_true", help="per character: the evidence and the decision (below)")
    decoding_args(ap)
    return ap


EXAMPLES = """\
examples:
  python -m corrector "这件事情我已经知到了。"
  python -m corrector --protect 张三 --protect 李四,王五 "张三以经到了"
  python -m corrector --input in.txt --output out.txt --json
  cat in.txt | python -m corrector --explain
  python -m corrector --set top_k=10 --set use_lm=false "今天天汽很好"
  python -m corrector similar 己
"""

EXPLAIN_HELP = f"""\
--explain prints the corrected text, then one row per character the model reads:
  POS CHAR rtd=R keep=K  C(S,p=G) C(S,p=G) ...  [DECISION]
{EXPLAIN_COLUMNS}
With --json, one JSON object per text instead: {{"correction": ..., "chars": [...]}}, each candidate with every
feature the ranker weighed (named in corrector/features.py)."""


class _Version(argparse.Action):
    """--version, looked up only when asked for (importlib.metadata is slow to import)."""

    def __call__(self, parser, namespace, values, option_string=None):
        print(version_line(getattr(namespace, "model", None)))
        parser.exit()


def version_line(model: str | None = None) -> str:
    """The installed version, and the model's name, version and shape (``--model`` when given before
    ``--version``, else ``CSC_MODEL_DIR`` or the default bundle): bigger networks are slower."""
    from corrector.model_path import installed_version

    line = f"electra-csc {installed_version() or '(not installed)'}"
    shape = model_shape(model)
    return f"{line}; {shape}" if shape else line


def model_shape(model: str | None) -> str | None:
    """"model NAME VERSION: discriminator L x H, generator L x H" from the bundle's JSON files (no network loads)."""
    from corrector.bundle import Bundle
    from corrector.model_path import default_model_path

    try:
        bundle = Bundle.load(Path(model) if model else default_model_path())
        nets = {role: json.loads(bundle.file(f"{role}/config.json").read_text(encoding="utf-8"))
                for role in ("discriminator", "generator") if bundle.file(f"{role}/config.json").is_file()}
    except (CorrectorError, OSError, ValueError):
        return None
    shapes = ", ".join(f"{role} {c.get('num_hidden_layers')} x {c.get('hidden_size')}" for role, c in nets.items())
    return f"model {bundle.name} {bundle.version}" + (f": {shapes}" if shapes else "")


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    try:
        if argv and argv[0] == "similar":
            code = run_similar(argv[1:])
        elif argv and argv[0] == "export":
            raise CliError("'export' moved to the training package: "
                           "python -m training.bundle.export --hf DISC_DIR GEN_DIR --out OUT_DIR (needs the 'train' extra)")
        elif argv and argv[0] == "batch":
            from corrector.batch.command import run_batch

            code = run_batch(argv[1:])
        elif argv and argv[0] == "settings":
            code = run_settings(argv[1:])
        elif argv and argv[0] == "serve":
            code = run_registered("serve", argv[1:])
        elif argv and argv[0] == "adapt":
            code = run_adapt(argv[1:])
        elif argv and argv[0] == "lint":
            from corrector.lint.command_line import main as lint_main

            code = lint_main(argv[1:])
        elif argv and argv[0] == "lsp":
            code = run_lsp(argv[1:])
        else:
            code = run_correct(argv)
    except (CliError, CorrectorError) as e:
        print(f"error: {e}", file=sys.stderr)
        code = 1
    except KeyboardInterrupt:
        code = 130
    except BrokenPipeError:
        code = 0
    sys.exit(code)


COMMANDS = "electra_csc.commands"  # the entry-point group of subcommands other parts register (the service: 'serve')


def run_registered(name: str, argv: list[str]) -> int:
    """A subcommand another part of the package registers under ``COMMANDS`` (pyproject.toml): the HTTP service
    registers ``serve``, so that this command line names no module above it. A missing extra is one line."""
    from importlib.metadata import entry_points

    from corrector.model_path import missing_extra

    found = [ep for ep in entry_points(group=COMMANDS) if ep.name == name]
    if not found:
        raise CliError(f"'{name}' is registered when the package is installed (pip install -e . in a checkout)")
    try:
        command = found[0].load()
    except ModuleNotFoundError as e:  # fastapi, uvicorn, pydantic, ...: the extra is not installed
        raise CliError(missing_extra(e, f"'{name}'", found[0].extras[0] if found[0].extras else name)) from None
    command(argv, prog=f"python -m corrector {name}")
    return 0


def run_lsp(argv: list[str]) -> int:
    """The linter as a language server on stdio (corrector/lint/lsp_server.py)."""
    from corrector.model_path import missing_extra

    try:
        from corrector.lint.lsp_server import main as lsp_main

        return lsp_main(argv)
    except ModuleNotFoundError as e:
        if e.name not in ("pygls", "lsprotocol", "markdown_it", "mdit_py_plugins", "linkify_it", "pygments", "pathspec"):
            raise
        raise CliError(missing_extra(e, "the language server", "lint")) from None


def run_adapt(argv: list[str]) -> int:
    from corrector.adapt.adapted_bundle import main as adapt_main

    return adapt_main(argv)


def run_correct(argv: list[str]) -> int:
    args = correct_parser().parse_args(argv)
    if args.text is not None and args.input is not None:
        raise CliError("give the text as an argument or with --input, not both")
    if args.text is None and args.input is None and sys.stdin.isatty():
        raise CliError("no text to correct: python -m corrector TEXT, --input FILE, or lines on stdin "
                       "(a pipe, or '-' to type them)")
    from corrector.corrector import Corrector

    fixer = Corrector.load(args.model, device=args.device, precision=args.precision, lm=args.lm,
                           **decoding_settings(args))

    out = _open_output(args.output)
    try:
        if args.text is not None and args.text != "-":
            _emit(fixer, [args.text], args, out)
            return 0
        src = args.input or "-"
        lines, total = _input_lines(src)
        from tqdm import tqdm

        with tqdm(total=total, unit=" lines", file=sys.stderr, disable=None) as bar:
            for batch in _batches(lines, BATCH_LINES):
                _emit(fixer, batch, args, out)
                bar.update(len(batch))
    finally:
        if out is not sys.stdout:
            out.close()
    return 0


def run_settings(argv: list[str]) -> int:
    """``python -m corrector settings [--model DIR]``: every decoding setting, with the value in force for the bundle
    (its manifest's tuned defaults, its ranker's threshold) and what it does."""
    ap = argparse.ArgumentParser(prog="python -m corrector settings", description=run_settings.__doc__)
    model_args(ap)
    args = ap.parse_args(argv)
    from corrector.config import settings_table
    from corrector.model_path import default_model_path

    path = Path(args.model) if args.model else default_model_path()
    try:  # what Corrector.load resolves, without loading the networks
        values, ranker = in_force_for(path)
    except CorrectorError as e:
        raise CliError(str(e)) from None
    except (TypeError, ValueError) as e:
        raise CliError(f"bad model bundle at {path}: {e}") from None
    if values["threshold"] is None:  # the bundle's: one with the LM, one without
        values["threshold"] = f"{ranker.threshold_for(True):g} ({ranker.threshold_for(False):g} with use_lm false)"
    print(settings_table(values))
    return 0


def _emit(fixer, texts: list[str], args: argparse.Namespace, out: TextIO) -> None:
    if args.explain:
        for t in texts:
            ex = fixer.explain(t)
            out.write(json.dumps(ex.to_dict(), ensure_ascii=False) + "\n" if args.json else _explain_text(ex))
        return
    for c in fixer.correct_batch(texts):
        out.write((json.dumps(c.to_dict(), ensure_ascii=False) if args.json else c.target) + "\n")
    out.flush()


def _explain_text(ex) -> str:
    """The corrected text, then a row per character the model reads (EXPLAIN_HELP)."""
    return "\n".join([ex.correction.target, *(c.row() for c in ex.chars if c.editable)]) + "\n"


def _input_lines(src: str) -> tuple[Iterator[str], int | None]:
    if src == "-":
        stream = sys.stdin
        if hasattr(stream, "reconfigure"):
            stream.reconfigure(encoding="utf-8", errors="strict", newline="\n")
        return _strip_newlines(stream, "stdin"), None
    text = read_text(src, newline="")  # as stdin: only \n ends a line, a \r stays in its line
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return iter(lines), len(lines)


def _strip_newlines(stream: TextIO, name: str) -> Iterator[str]:
    n = 0
    try:
        for n, line in enumerate(stream, 1):  # noqa: B007
            yield line[:-1] if line.endswith("\n") else line
    except UnicodeDecodeError:
        raise CliError(f"{name} is not valid UTF-8 (line {n + 1})") from None


def _batches(lines: Iterator[str], size: int) -> Iterator[list[str]]:
    batch: list[str] = []
    for line in lines:
        batch.append(line)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _open_output(path: str | None) -> TextIO:
    # surrogateescape: the only surrogates that reach the CLI are undecodable argv bytes; write them back as is
    if not path:
        if hasattr(sys.stdout, "reconfigure"):
            sys.stdout.reconfigure(encoding="utf-8", errors="surrogateescape")
        return sys.stdout
    try:
        return open(path, "w", encoding="utf-8", errors="surrogateescape", newline="")
    except OSError as e:
        raise CliError(f"cannot write {path}: {e.strerror}") from None


def run_similar(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m corrector similar",
                                 description="Print a character's sound and shape neighbours with scores.")
    ap.add_argument("char", help="one Chinese character")
    model_args(ap)
    ap.add_argument("-k", type=int, default=10, help="neighbours of each kind")
    args = ap.parse_args(argv)
    if len(args.char) != 1 or not is_cjk(args.char):
        raise CliError(f"expected one Chinese character, got {args.char!r}")
    from corrector.bundle import SIMILARITY_DIR, Bundle
    from corrector.evidence.similarity import SimilarityTables
    from corrector.model_path import default_model_path

    root = Path(args.model) if args.model else default_model_path()
    tables = SimilarityTables.load(Bundle.load(root).file(SIMILARITY_DIR))
    ch = args.char
    print(f"{ch}  pinyin: {', '.join(tables.readings(ch)) or '?'}  frequency: {tables.frequency(ch)}")
    print("sound: " + "  ".join(f"{c} {s:.2f}" for c, s in tables.pinyin_neighbours(ch, args.k)))
    print("shape: " + "  ".join(f"{c} {s:.2f}" for c, s in tables.shape_neighbours(ch, args.k)))
    return 0

