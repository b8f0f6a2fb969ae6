"""Any arguments to the reading commands: an answer or a short error naming the problem, never a
traceback, and an exit code the CLI documents (0 ok, 1 the index cannot answer, 2 a usage or config
error, 3 partial)."""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from builder.cli import main
from builder.core.config import load_config
from builder.sync import build
from builder.core.synclog import SyncLog
from tests.conftest import write_config, write_note

pytestmark = pytest.mark.slow

ODD = ("", " ", "-", "--", "0", "-1", "3", "99999999999999999999", "1e3", "nan", "notes", "nikde", "index.md",
       "../index.md", "/etc/passwd", "cestovani/", "cestovani/snezka.md", "hory", "[", "(", "*", "\\", "a" * 300,
       "Sněžka", "čelovka", "--json", "-h", "ěščřžýáíé", "\u202e", "\ufeff", "snezka#", "#nadpis", "%s", "{}")
value = st.sampled_from(ODD) | st.text(max_size=12)
COMMANDS = {
    "search": (["--limit", "--source", "--tag", "--mode"], ["--as-typed", "--json"], 1),
    "toc": (["--source", "--tag", "--folder"], ["--json"], 0),
    "grep": (["--source", "--max-results"], ["-i", "--json"], 1),
    "read": (["--section", "--from-line", "--max-lines"], ["--json"], 2),
    "status": ([], ["--json"], 0),
}


@st.composite
def argv(draw: st.DrawFn) -> list[str]:
    command = draw(st.sampled_from(sorted(COMMANDS)))
    options, flags, positionals = COMMANDS[command]
    out = [command]
    for option in draw(st.lists(st.sampled_from(options), max_size=3)) if options else []:
        out += [option, draw(value)]
    out += draw(st.lists(st.sampled_from(flags), unique=True, max_size=2))
    out += [draw(value) for _ in range(draw(st.integers(max(0, positionals - 1), positionals + 1)))]
    return out


@pytest.fixture(scope="module")
def config_path(tmp_path_factory):
    root = tmp_path_factory.mktemp("cli-properties")
    notes = root / "notes"
    write_note(notes, "index.md", "# Rozcestník\n\n[[snezka]]\n")
    write_note(notes, "cestovani/snezka.md", "---\ntags: [hory]\n---\n# Sněžka\n\n## Nadpis\n\nPowerbanka a čelovka.\n")
    config = load_config(write_config(root, "index: data/index.sqlite\nembedding:\n  provider: none\n"
                                            "sources:\n  notes:\n    folder: notes\n"))
    assert build(config, log=SyncLog(config.log_path, echo_info=False)) == 0
    return str(config.path)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(args=argv())
def test_any_arguments_get_an_answer_or_a_one_line_error(config_path, capsys, args) -> None:
    capsys.readouterr()
    try:
        code = main([*args, "--config", config_path])
    except SystemExit as exc:  # argparse: --help, or a usage error
        code = exc.code if isinstance(exc.code, int) else 2
    err = capsys.readouterr().err
    assert code in (0, 1, 2, 3), (args, code, err)
    assert "Traceback" not in err, (args, err)
    if code == 2 and "-h" not in args:  # the last line says what is wrong (argparse prints its usage above)
        assert err.strip().splitlines()[-1].startswith("notes-portal"), (args, err)


def test_a_usage_error_shows_a_control_character_it_quotes(config_path, capsys) -> None:
    with pytest.raises(SystemExit):
        main(["grep", "x", "\r\x1b[2Jpasted\nline", "--config", config_path])
    assert capsys.readouterr().err.splitlines()[-1] == (
        "notes-portal grep: error: unrecognized arguments: \\u000d\\u001b[2Jpasted\\u000aline")
