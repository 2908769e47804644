"""Every wrong value stops at load with one line naming the file and line, the section and the key (issue 30).

The first block is the issue's list (values a new user wrote that used to end in a traceback, fail after the agent's
work, reach the model as a Python error, or pass silently: `[permissions] deny = "bash"` became the four rules b, a,
s, h); the rest tries each section's keys with a wrong type, an unknown key, a value out of range and a string for a
list. The same load runs in every frontend before any session (tests/config/test_config_frontends.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from coder.base.errors import EXIT_USAGE, ConfigError
from coder.config.layers import load_config, user_config_path

ISSUE = [  # (the user's config, what the one line must say)
    ('[vcs]\nkeep_sessions = "many"', '[vcs] keep_sessions = "many": expected a whole number'),
    ('[skills]\nprompt_chars = "lots"', '[skills] prompt_chars = "lots": expected a whole number'),
    ('[instructions]\nmax_bytes = "32k"', '[instructions] max_bytes = "32k": expected a whole number'),
    ('[review]\nmax_fix_rounds = "two"', '[review] max_fix_rounds = "two": expected a whole number'),
    ('[edit]\nmax_bytes = "big"', '[edit] max_bytes = "big": expected a whole number'),
    ('[edit]\nsyntax_guard = "false"', '[edit] syntax_guard = "false": expected true or false (write it without '
                                       'quotes)'),
    ("[review]\nstages = 5", '[review] stages = 5: expected a list of names among "apply"'),
    ('[review]\nstages = "llm"', '[review] stages = "llm": expected a list of names among'),
    ("[providers.anthropic]\nmax_retries = -1", "[providers.anthropic] max_retries = -1: must be at least 0"),
    ('[providers.anthropic]\nmax_retries = "3"', '[providers.anthropic] max_retries = "3": expected a whole number '
                                                 '(write it without quotes)'),
    ("[providers.anthropic]\nmax_retries = 2.5", "[providers.anthropic] max_retries = 2.5: expected a whole number"),
    ('[permissions]\ndeny = "bash"', '[permissions] deny = "bash": expected a list of strings, like ["bash"] (a '
                                     'string is not split into a list)'),
    ("max_turns = 'ten'", 'max_turns = "ten": expected a whole number'),
    ("max_turns = 0", "max_turns = 0: must be greater than 0"),
    ("max_cost = -1", "max_cost = -1: must be greater than 0"),
    ("permission_mode = 'yolo'", 'permission_mode = "yolo": expected one of "plan", "ask", "auto-edit", "auto"'),
    ("colour = 'blue'", "colour: unknown key"),
    ("[permissions]\ndenny = ['bash']", "[permissions] denny: unknown key (did you mean deny?"),
]

OTHERS = [
    # top level
    ("max_tokens = 8192.5", "max_tokens = 8192.5: expected a whole number"),
    ("max_wall_time = true", "max_wall_time = true: expected a number"),
    ("thinking_budget = -5", "thinking_budget = -5: must be at least 0"),
    ("model = ''", 'model = "": must not be empty'),
    ("model = 3", "model = 3: expected a string"),
    ("sandbox = 3", "sandbox = 3: expected a table ([sandbox])"),
    # [sandbox]
    ("[sandbox]\nenabled = 'no'", '[sandbox] enabled = "no": expected true or false'),
    ("[sandbox]\nextra_rw = '/tmp'", '[sandbox] extra_rw = "/tmp": expected a list of strings, like ["/tmp"]'),
    ("[sandbox]\ntimeout = -1", "[sandbox] timeout = -1: must be at least 0"),
    ("[sandbox]\nnetwrok = true", "[sandbox] netwrok: unknown key (did you mean network?"),
    ("[sandbox]\nallowed_domains = ['https://pypi.org']", "[sandbox] allowed_domains = [\"https://pypi.org\"]: "
                                                          "'https://pypi.org' is not a domain pattern"),
    ("[sandbox]\nnetwork_presets = ['perl']", "unknown preset 'perl'"),
    ("[sandbox]\nnetwork = true\ndenied_domains = ['x.test']", "[sandbox] network: network = true opens every "
                                                               "destination"),
    # [context]
    ("[context]\ntarget = 1.5", "[context] target = 1.5: must be at most 0.99"),
    ("[context]\nrecent_turns = 2.5", "[context] recent_turns = 2.5: expected a whole number"),
    ("[context]\ncount_with_provider = 'sometimes'", '[context] count_with_provider = "sometimes": expected one of'),
    ("[context]\nbudget = 0", "[context] budget = 0: must be greater than 0"),
    # [edit]
    ("[edit]\nview_max_chars = 0", "[edit] view_max_chars = 0: must be greater than 0"),
    # [review]
    ("[review]\nstages = ['lint', 'tset']", '[review] stages #2 = "tset": expected one of "apply"'),
    ("[review]\nllm_on_fail = 1", "[review] llm_on_fail = 1: expected true or false"),
    ("[review]\nmax_fix_rounds = -1", "[review] max_fix_rounds = -1: must be at least 0"),
    ("[review.tests]\nfull_suite = 'always'", '[review.tests] full_suite = "always": expected true or false or '
                                              '"auto"'),
    ("[review.tests]\ntimeout = 0", "[review.tests] timeout = 0: must be greater than 0"),
    ("[review.tests]\ncomand = 'make test'", "[review.tests] comand: unknown key (did you mean command?"),
    # [vcs]: a typo here used to run commit hooks on the host (anything but "sandbox" and "skip" did)
    ("[vcs]\nhooks = 'Sandbox'", '[vcs] hooks = "Sandbox": expected one of "sandbox", "skip", "host"'),
    ("[vcs]\nkeep_sessions = 0", "[vcs] keep_sessions = 0: must be at least 1"),
    # [[hooks.EVENT]]
    ("[[hooks.before_tool]]\nmatch = 'bash'", "[hooks] before_tool #1: needs `command`"),
    ("[[hooks.before_tool]]\ncommand = 'a'\n[[hooks.before_tool]]\ncommand = 3",
     "[hooks.before_tool #2] command = 3: expected a string"),
    ("[[hooks.before_tool]]\ncommand = 'a'\nsandbox = 'false'", '[hooks.before_tool #1] sandbox = "false": expected '
                                                                'true or false'),
    ("[[hooks.before_everything]]\ncommand = 'a'", "[hooks] before_everything: unknown key"),
    ("[hooks.before_tool]\ncommand = 'a'", "[hooks] before_tool = a table: expected a list of tables "
                                           "([[hooks.before_tool]])"),
    # [mcp]
    ("[mcp.servers.x]\nargs = []", "[mcp.servers.x] command: needs exactly one of `command` (stdio) or `url`"),
    ("[mcp.servers.x]\ncommand = 'a'\nargs = '-v'", '[mcp.servers.x] args = "-v": expected a list of strings'),
    ("[mcp.servers.x]\ncommand = 'a'\nstartup_timeout = 0", "[mcp.servers.x] startup_timeout = 0: must be greater"),
    ("[mcp]\nserver = {}", "[mcp] server: unknown key (did you mean servers?"),
    # [lsp]
    ("[lsp]\nseverity = 'fatal'", '[lsp] severity = "fatal": expected one of "error", "warning"'),
    ("[lsp]\nwait = -1", "[lsp] wait = -1: must be greater than 0"),
    ("[lsp]\nignore = 'reportMissingImports'", '[lsp] ignore = "reportMissingImports": expected a list of strings'),
    ("[lsp.servers.mine]\ncommand = 'mine-ls'", '[lsp.servers.mine] command = "mine-ls": expected a list of strings'),
    ("[lsp.servers.mine]\ncommand = []\nlanguages = ['python']", "[lsp.servers.mine] command: needs at least one"),
    # [stuck]
    ("[stuck]\ninteractive = 'ask'", '[stuck] interactive = "ask": expected one of "warn", "stop", "off"'),
    ("[stuck]\nnudges_before_stop = -1", "[stuck] nudges_before_stop = -1: must be at least 0"),
    ("[stuck.repeat]\nnudge = 2", "[stuck.repeat] nudge: unknown key (did you mean nudge_at?"),
    ("[stuck.same_error]\nwait_factor = 2", "[stuck.same_error] wait_factor: unknown key"),
    ("[stuck.loops]\nnudge_at = 2", "[stuck] loops: unknown key"),
    # [notifications], [skills]
    ("[notifications]\nwhen = 'sometimes'", '[notifications] when = "sometimes": expected one of "unfocused"'),
    ("[notifications]\nmethod = 'osc99'", '[notifications] method = "osc99": expected one of'),
    ("[skills]\nprompt_chars = -1", "[skills] prompt_chars = -1: must be at least 0"),
    # [providers.NAME], [pricing."MODEL"]
    ("[providers.antropic]\nmax_retries = 1", "[providers] antropic: unknown provider (did you mean anthropic?"),
    ("[providers.scripted]\nmax_retries = 1", "[providers.scripted] max_retries: not a setting of the scripted "
                                              "provider"),
    ("[providers.openai]\nbase_url = ''", '[providers.openai] base_url = "": must not be empty'),
    ("[providers.anthropic]\ntimeout = 0", "[providers.anthropic] timeout = 0: must be greater than 0"),
    ("[providers.anthropic]\ncount_tokens_api = 'yes'", '[providers.anthropic] count_tokens_api = "yes": expected'),
    ("[pricing.my-model]\ninput = 1", "[pricing] my-model: needs `output`"),
    ("[pricing.my-model]\ninput = -1\noutput = 1", "[pricing.my-model] input = -1: must be at least 0"),
    ("[pricing.'my.model']\ninput = 'free'\noutput = 0", '[pricing."my.model"] input = "free": expected a number'),
]


@pytest.mark.parametrize(("text", "says"), ISSUE + OTHERS, ids=[t.replace("\n", " ") for t, _ in ISSUE + OTHERS])
def test_a_wrong_value_is_one_line_naming_file_line_section_and_key(tmp_path: Path, text: str, says: str) -> None:
    path = user_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text + "\n")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path)
    message = str(info.value)
    assert info.value.exit_code == EXIT_USAGE == 2
    assert "\n" not in message, message
    assert message.startswith(f"{path}:"), message  # the file, then the line where the key is written
    line = int(message[len(str(path)) + 1:].split(":", 1)[0])
    assert 1 <= line <= text.count("\n") + 1
    assert says in message, message


def test_the_line_is_the_line_of_the_key(tmp_path: Path) -> None:
    path = user_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('model = "anthropic:claude-sonnet-4-6"\n\n[sandbox]\ntimeout = 30\n\n[vcs]\n# comment\n'
                    'hooks = "host"\nkeep_sessions = "many"\n')
    with pytest.raises(ConfigError, match=rf"^{path}:9: \[vcs\] keep_sessions"):
        load_config(tmp_path)


def test_the_same_checks_hold_for_a_repository_and_the_environment(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    repo_file = tmp_path / ".coder" / "config.toml"
    repo_file.parent.mkdir()
    repo_file.write_text("[edit]\nsyntax_guard = 'false'\n")
    with pytest.raises(ConfigError, match=rf"^{repo_file}:2: \[edit\] syntax_guard"):
        load_config(tmp_path)  # untrusted too: a mistake is a mistake, even in keys that would be ignored
    repo_file.write_text("[vcs]\nhooks = 'host'\n")  # a valid key a repository may not set: ignored, said once
    assert load_config(tmp_path, trusted=True).vcs.hooks == "sandbox"
    monkeypatch.setenv("CODER_MAX_TURNS", "ten")
    with pytest.raises(ConfigError, match=r"environment variable CODER_MAX_TURNS='ten': expected a whole number"):
        load_config(tmp_path)
    monkeypatch.setenv("CODER_MAX_TURNS", "-3")
    with pytest.raises(ConfigError, match=r"^environment CODER_MAX_TURNS: max_turns = -3: must be greater than 0$"):
        load_config(tmp_path)
    monkeypatch.delenv("CODER_MAX_TURNS")
    monkeypatch.setenv("CODER_NETWORK_PRESETS", "python,perl")
    with pytest.raises(ConfigError, match=r"^environment CODER_NETWORK_PRESETS: \[sandbox\] network_presets"):
        load_config(tmp_path)
    monkeypatch.delenv("CODER_NETWORK_PRESETS")
    monkeypatch.setenv("CODER_SANDBOX_PRIVATE_CGROUPS", "maybe")  # a yes/no variable takes 1/0, true/false
    with pytest.raises(ConfigError, match=r"CODER_SANDBOX_PRIVATE_CGROUPS='maybe': expected 1 or 0"):
        load_config(tmp_path)
    monkeypatch.setenv("CODER_SANDBOX_PRIVATE_CGROUPS", "1")
    assert load_config(tmp_path).sandbox.private_cgroups is True


def test_a_flag_is_checked_like_a_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"^flag --max-turns: max_turns = 0: must be greater than 0$"):
        load_config(tmp_path, {"max_turns": 0})


def test_good_values_are_read_as_written(tmp_path: Path) -> None:
    """The control: the same keys, written right, load with their values (an int where a float is declared is
    a float; one string in a list is that one string)."""
    path = user_config_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('max_cost = 3\n[permissions]\ndeny = ["bash"]\n[edit]\nsyntax_guard = false\nmax_bytes = 1000\n'
                    '[vcs]\nkeep_sessions = 5\n[review]\nstages = ["lint"]\nmax_fix_rounds = 0\n'
                    '[providers.anthropic]\nmax_retries = 0\n[review.tests]\nfull_suite = true\n')
    config = load_config(tmp_path)
    assert config.max_cost == 3.0 and isinstance(config.max_cost, float)
    assert config.permissions.deny == ["bash"] and config.edit.syntax_guard is False and config.edit.max_bytes == 1000
    assert config.vcs.keep_sessions == 5 and config.review.stages == ["lint"] and config.review.max_fix_rounds == 0
    assert config.provider("anthropic").max_retries == 0 and config.provider("openai").max_retries == 4
    assert config.review.tests.full_suite is True
