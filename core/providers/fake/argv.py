"""The fake agent's command line: the real CLIs' grammars, refusals included.

Switchboard builds argv for Claude Code 2.1.197 (commander.js) and Codex
0.171.0 (clap); the fake provider must read that argv exactly as the real
program does, so a launch that only works against the fake is impossible.
Both grammars were checked against the pinned binaries (``--help`` and argv
that fail before any model call; ``tests/realcli/test_argv_shapes.py`` keeps
the two in step). Error lines keep the real wording and exit codes.

commander (Claude): options and operands may interleave; ``<v>`` takes the
next word whatever it looks like, ``[v]`` takes it unless it starts with
``-``, ``<v...>`` keeps taking words until one starts with ``-``;
``--opt=value`` is one word and never opens a list; ``-abc`` combines flags
or gives a short option its value; ``--`` ends options; an unknown option is
an error (exit 1); extra operands are ignored, the first is the prompt.

clap (Codex): ``codex [OPTIONS] [PROMPT]``, ``codex [OPTIONS] resume
[OPTIONS] [SESSION_ID] [PROMPT]`` or ``codex [OPTIONS] fork [OPTIONS] [SESSION_ID]
[PROMPT]`` (0.166 to 0.171: ``fork`` takes ``--last`` and ``--all`` but not
``--include-non-interactive``); global options are accepted after the
subcommand too; an option value never starts with ``-``; a single-valued
option or flag given twice is an error; a word past the last positional is an
error (exit 2).

The fake's own options (``--provider``, ``--hook-command``, ...) are added
to both grammars as ordinary options, so they end a variadic list like any
option would.
"""

from __future__ import annotations

import difflib
import json
import os
import uuid
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path


class Arity(Enum):
    FLAG = "flag"
    VALUE = "value"  # <v>
    OPTIONAL = "optional"  # [v]
    VARIADIC = "variadic"  # <v...>


@dataclass(frozen=True)
class Opt:
    flags: str
    """As the real help prints it (error messages quote it): ``-n, --name <name>``."""
    arity: Arity
    dest: str
    choices: tuple[str, ...] = ()
    repeatable: bool = False
    """clap: may be given more than once (commander: every option may)."""
    resume_only: bool = False
    """clap: an option of ``codex resume`` (and ``codex fork``) only."""
    not_fork: bool = False
    """clap: an option of ``codex resume`` that ``codex fork`` does not take."""

    @property
    def names(self) -> tuple[str, ...]:
        words = self.flags.split(" <")[0].split(" [")[0]
        return tuple(part.strip() for part in words.split(","))

    @property
    def long(self) -> str:
        return next((n for n in self.names if n.startswith("--")), self.names[0])


FAKE_PROVIDERS: tuple[str, ...] = ("claude", "codex", "gemini", "opencode")
"""The providers whose CLI the fake agent emulates; any other is refused by name."""


class ArgvError(Exception):
    """The real CLI would refuse this argv: its message (stderr) and exit code."""

    def __init__(self, message: str, exit_code: int) -> None:
        super().__init__(message)
        self.message = message
        self.exit_code = exit_code


F, V, Q, L = Arity.FLAG, Arity.VALUE, Arity.OPTIONAL, Arity.VARIADIC

FAKE_OPTIONS = (
    Opt("--provider <provider>", V, "provider", FAKE_PROVIDERS),
    Opt("--fake-version <version>", V, "fake_version"),
    Opt("--hook-command <command>", V, "hook_command"),
    Opt("--agent-command <command>", V, "agent_command"),
    Opt("--no-stop-on <word>", V, "no_stop_on", repeatable=True),
    Opt("--session-end <when>", V, "session_end", ("auto", "always", "never")),
    Opt("--reply <text>", V, "reply"),
    Opt("--startup-dialog <title>", V, "startup_dialog"),
)
"""The fake's own knobs (never given to a real CLI)."""

CLAUDE_OPTIONS = (
    Opt("--add-dir <directories...>", L, "add_dir"),
    Opt("--agent <agent>", V, "agent"),
    Opt("--agents <json>", V, "agents"),
    Opt("--allow-dangerously-skip-permissions", F, "allow_dangerously_skip_permissions"),
    Opt("--allowedTools, --allowed-tools <tools...>", L, "allowed_tools"),
    Opt("--append-system-prompt <prompt>", V, "append_system_prompt"),
    Opt("--ax-screen-reader", F, "ax_screen_reader"),
    Opt("--bg, --background", F, "background"),
    Opt("--bare", F, "bare"),
    Opt("--betas <betas...>", L, "betas"),
    Opt("--brief", F, "brief"),
    Opt("--chrome", F, "chrome"),
    Opt("-c, --continue", F, "continue_"),
    Opt("--dangerously-skip-permissions", F, "dangerously_skip_permissions"),
    Opt("-d, --debug [filter]", Q, "debug"),
    Opt("--debug-file <path>", V, "debug_file"),
    Opt("--disable-slash-commands", F, "disable_slash_commands"),
    Opt("--disallowedTools, --disallowed-tools <tools...>", L, "disallowed_tools"),
    Opt("--effort <level>", V, "effort"),
    Opt("--exclude-dynamic-system-prompt-sections", F, "exclude_dynamic"),
    Opt("--fallback-model <model>", V, "fallback_model"),
    Opt("--file <specs...>", L, "file"),
    Opt("--fork-session", F, "fork_session"),
    Opt("--from-pr [value]", Q, "from_pr"),
    Opt("-h, --help", F, "help"),
    Opt("--ide", F, "ide"),
    Opt("--include-hook-events", F, "include_hook_events"),
    Opt("--include-partial-messages", F, "include_partial_messages"),
    Opt("--input-format <format>", V, "input_format", ("text", "stream-json")),
    Opt("--json-schema <schema>", V, "json_schema"),
    Opt("--max-budget-usd <amount>", V, "max_budget_usd"),
    Opt("--mcp-config <configs...>", L, "mcp_config"),
    Opt("--model <model>", V, "model"),
    Opt("-n, --name <name>", V, "name"),
    Opt("--no-chrome", F, "no_chrome"),
    Opt("--no-session-persistence", F, "no_session_persistence"),
    Opt("--output-format <format>", V, "output_format", ("text", "json", "stream-json")),
    Opt("--permission-mode <mode>", V, "permission_mode",
        ("acceptEdits", "auto", "bypassPermissions", "default", "dontAsk", "plan")),
    Opt("--plugin-dir <path>", V, "plugin_dir"),
    Opt("--plugin-url <url>", V, "plugin_url"),
    Opt("-p, --print", F, "print"),
    Opt("--prompt-suggestions [value]", Q, "prompt_suggestions",
        ("true", "false", "1", "0", "yes", "no", "on", "off")),
    Opt("--remote-control [name]", Q, "remote_control"),
    Opt("--remote-control-session-name-prefix <prefix>", V, "remote_control_prefix"),
    Opt("--replay-user-messages", F, "replay_user_messages"),
    Opt("-r, --resume [value]", Q, "resume"),
    Opt("--safe-mode", F, "safe_mode"),
    Opt("--session-id <uuid>", V, "session_id"),
    Opt("--setting-sources <sources>", V, "setting_sources"),
    Opt("--settings <file-or-json>", V, "settings"),
    Opt("--strict-mcp-config", F, "strict_mcp_config"),
    Opt("--system-prompt <prompt>", V, "system_prompt"),
    # hidden from --help, accepted by 2.1.197 to 2.1.332 with these choices
    Opt("--teammate-mode <mode>", V, "teammate_mode", ("auto", "tmux", "iterm2", "in-process")),
    Opt("--tmux", F, "tmux"),
    Opt("--tools <tools...>", L, "tools"),
    Opt("--verbose", F, "verbose"),
    Opt("-v, --version", F, "version"),
    Opt("-w, --worktree [name]", Q, "worktree"),
    *FAKE_OPTIONS,
)

CLAUDE_COMMANDS = ("agents", "auth", "auto-mode", "doctor", "gateway", "install", "mcp",
                   "plugin", "plugins", "project", "setup-token", "ultrareview", "update",
                   "upgrade")
"""Subcommands: a first operand with one of these names is not a prompt."""

GEMINI_OPTIONS = (
    # Gemini CLI 0.61.0's ``gemini --help`` (yargs), the options a launch may meet
    Opt("-d, --debug", F, "debug"),
    Opt("-m, --model <model>", V, "model"),
    Opt("-p, --prompt <prompt>", V, "print"),
    Opt("-i, --prompt-interactive <prompt>", V, "prompt_interactive"),
    Opt("--worktree <name>", V, "worktree"),
    Opt("-s, --sandbox", F, "sandbox"),
    Opt("--skip-trust", F, "skip_trust"),
    Opt("-y, --yolo", F, "yolo"),
    Opt("--approval-mode <mode>", V, "approval_mode", ("default", "auto_edit", "yolo", "plan")),
    Opt("--policy <files>", V, "policy", repeatable=True),
    Opt("--admin-policy <files>", V, "admin_policy", repeatable=True),
    Opt("--acp", F, "acp"),
    Opt("--experimental-acp", F, "experimental_acp"),
    Opt("--allowed-mcp-server-names <names>", V, "allowed_mcp", repeatable=True),
    Opt("--allowed-tools <tools>", V, "allowed_tools", repeatable=True),
    Opt("-e, --extensions <names>", V, "extensions", repeatable=True),
    Opt("-l, --list-extensions", F, "list_extensions"),
    Opt("-r, --resume <session>", V, "resume"),
    Opt("--session-id <id>", V, "session_id"),
    Opt("--session-file <file>", V, "session_file"),
    Opt("--list-sessions", F, "list_sessions"),
    Opt("--delete-session <session>", V, "delete_session"),
    Opt("--include-directories <dirs>", V, "include_directories", repeatable=True),
    Opt("--screen-reader", F, "screen_reader"),
    Opt("-o, --output-format <format>", V, "output_format", ("text", "json", "stream-json")),
    Opt("--raw-output", F, "raw_output"),
    Opt("--accept-raw-output-risk", F, "accept_raw_output_risk"),
    Opt("-v, --version", F, "version"),
    Opt("-h, --help", F, "help"),
    *FAKE_OPTIONS,
)
GEMINI_COMMANDS = ("mcp", "extensions", "extension", "skills", "skill", "hooks", "hook", "gemma")


OPENCODE_OPTIONS = (
    # OpenCode 1.18.33's ``opencode --help`` (yargs, strict), the TUI's options
    Opt("-h, --help", F, "help"),
    Opt("-v, --version", F, "version"),
    Opt("--print-logs", F, "print_logs"),
    Opt("--log-level <level>", V, "log_level", ("DEBUG", "INFO", "WARN", "ERROR")),
    Opt("--pure", F, "pure"),
    Opt("--port <port>", V, "port"),
    Opt("--hostname <hostname>", V, "hostname"),
    Opt("--mdns", F, "mdns"),
    Opt("--mdns-domain <domain>", V, "mdns_domain"),
    Opt("--cors <domains>", V, "cors", repeatable=True),
    Opt("-m, --model <model>", V, "model"),
    Opt("-c, --continue", F, "continue_"),
    Opt("-s, --session <id>", V, "session"),
    Opt("--fork", F, "fork"),
    Opt("--prompt <prompt>", V, "prompt"),
    Opt("--agent <agent>", V, "agent"),
    Opt("--auto", F, "auto"),
    Opt("--mini", F, "mini"),
    Opt("--no-replay", F, "no_replay"),
    Opt("--replay-limit <n>", V, "replay_limit"),
    *FAKE_OPTIONS,
)
OPENCODE_COMMANDS = ("completion", "acp", "mcp", "attach", "run", "debug", "providers", "auth",
                     "agent", "upgrade", "uninstall", "serve", "web", "models", "stats",
                     "export", "import", "github", "pr", "session", "plugin", "plug", "db")
OPENCODE_ERROR = "\x1b[91m\x1b[1mError: \x1b[0m"
"""How OpenCode 1.18.33 starts the one line of a refusal it explains (red, bold)."""


CODEX_OPTIONS = (
    Opt("--config <key=value>", V, "config", repeatable=True),
    Opt("--enable <FEATURE>", V, "enable", repeatable=True),
    Opt("--disable <FEATURE>", V, "disable", repeatable=True),
    Opt("--remote <ADDR>", V, "remote"),
    Opt("--remote-auth-token-env <ENV_VAR>", V, "remote_auth_token_env"),
    Opt("--strict-config", F, "strict_config"),
    Opt("--image <FILE>", V, "image", repeatable=True),
    Opt("--model <MODEL>", V, "model"),
    Opt("--oss", F, "oss"),
    Opt("--local-provider <OSS_PROVIDER>", V, "local_provider"),
    Opt("--profile <CONFIG_PROFILE_V2>", V, "profile"),
    Opt("--sandbox <SANDBOX_MODE>", V, "sandbox",
        ("read-only", "workspace-write", "danger-full-access")),
    Opt("--approve-for-me", F, "approve_for_me"),
    Opt("--dangerously-bypass-approvals-and-sandbox", F, "yolo"),
    Opt("--dangerously-bypass-hook-trust", F, "bypass_hook_trust"),
    Opt("--cd <DIR>", V, "cd"),
    Opt("--worktree", F, "worktree"),
    Opt("--add-dir <DIR>", V, "add_dir", repeatable=True),
    Opt("--ask-for-approval <APPROVAL_POLICY>", V, "ask_for_approval"),
    Opt("--search", F, "search"),
    Opt("--no-alt-screen", F, "no_alt_screen"),
    Opt("--no-daemon", F, "no_daemon"),
    Opt("--help", F, "help"),
    Opt("--version", F, "version"),
    Opt("--last", F, "last", resume_only=True),
    Opt("--all", F, "all", resume_only=True),
    Opt("--include-non-interactive", F, "include_non_interactive", resume_only=True,
        not_fork=True),
    *FAKE_OPTIONS,
)
CODEX_SHORT = {"-c": "--config", "-i": "--image", "-m": "--model", "-p": "--profile",
               "-s": "--sandbox", "-C": "--cd", "-a": "--ask-for-approval", "-h": "--help",
               "-V": "--version"}
CODEX_ALIASES = {"--yolo": "--dangerously-bypass-approvals-and-sandbox"}
CODEX_COMMANDS = ("agents", "exec", "e", "review", "login", "logout", "mcp", "plugin",
                  "app-server", "remote-control", "completion", "update", "doctor", "sandbox",
                  "debug", "apply", "a", "resume", "queue", "archive", "delete",
                  "migrate-rollouts", "migrate-nfs-db", "unarchive", "fork", "cloud",
                  "exec-server", "features", "help")
CODEX_USAGE = ("Usage: codex [OPTIONS] [PROMPT]\n       codex [OPTIONS] <COMMAND> [ARGS]\n\n"
               "For more information, try '--help'.")
CODEX_RESUME_USAGE = ("Usage: codex resume [OPTIONS] [SESSION_ID] [PROMPT]\n\n"
                      "For more information, try '--help'.")
CODEX_FORK_USAGE = ("Usage: codex fork [OPTIONS] [SESSION_ID] [PROMPT]\n\n"
                    "For more information, try '--help'.")


@dataclass
class CliArgs:
    """What the emulated CLI understood (values as the real one would keep them)."""

    provider: str
    values: dict[str, object] = field(default_factory=dict)
    operands: list[str] = field(default_factory=list)
    prompt: str | None = None
    resume: bool = False
    """Codex: the ``resume`` subcommand was given."""
    fork: bool = False
    """Codex: the ``fork`` subcommand was given (``resume`` stays False)."""
    session_id: str | None = None
    """Claude: ``--session-id``; Codex: ``resume``'s or ``fork``'s SESSION_ID."""

    def get(self, dest: str, default: object = None) -> object:
        return self.values.get(dest, default)

    def list_of(self, dest: str) -> list[str]:
        value = self.values.get(dest)
        return list(value) if isinstance(value, list) else []

    def append(self, dest: str, value: object) -> None:
        """Add one occurrence of a repeatable option (its dest only ever holds a list)."""
        current = self.values.setdefault(dest, [])
        if not isinstance(current, list):
            raise TypeError(f"option {dest} holds {current!r}, not a list")
        current.append(value)


def provider_of(argv: list[str]) -> str:
    """``--provider P`` (or ``=P``) before any ``--``: which grammar the rest follows."""
    for index, word in enumerate(argv):
        if word == "--":
            break
        if word == "--provider" and index + 1 < len(argv):
            value = argv[index + 1]
        elif word.startswith("--provider="):
            value = word.partition("=")[2]
        else:
            continue
        if value in FAKE_PROVIDERS:
            return value
        raise ArgvError(f"fake_agent: --provider must be one of {', '.join(FAKE_PROVIDERS)}, "
                        f"not {value!r}", 2)
    raise ArgvError(f"fake_agent: --provider {'|'.join(FAKE_PROVIDERS)} is required", 2)


def parse(argv: list[str]) -> CliArgs:
    provider = provider_of(argv)
    if provider == "claude":
        return parse_claude(argv)
    if provider == "codex":
        return parse_codex(argv)
    if provider == "gemini":
        return parse_gemini(argv)
    if provider == "opencode":
        return parse_opencode(argv)
    raise ArgvError(f"fake_agent: no grammar for provider {provider!r}", 2)


# --- commander.js (Claude Code) ---------------------------------------------


def _commander_find(name: str) -> Opt | None:
    return next((opt for opt in CLAUDE_OPTIONS if name in opt.names), None)


def _commander_unknown(word: str) -> ArgvError:
    message = f"error: unknown option '{word}'"
    if word.startswith("--"):
        longs = [name for opt in CLAUDE_OPTIONS for name in opt.names if name.startswith("--")]
        close = difflib.get_close_matches(word.split("=")[0], longs, n=1, cutoff=0.8)
        if close:
            message += f"\n(Did you mean {close[0]}?)"
    return ArgvError(message, 1)


def _maybe_option(word: str) -> bool:
    return len(word) > 1 and word[0] == "-"


def parse_claude(argv: list[str]) -> CliArgs:
    """commander's parseOptions, then the checks Claude Code makes before any model call."""
    args = CliArgs("claude")
    words = list(argv)
    variadic: Opt | None = None

    def store(opt: Opt, value: object) -> None:
        if opt.choices and isinstance(value, str) and value not in opt.choices:
            raise ArgvError(f"error: option '{opt.flags}' argument '{value}' is invalid. "
                            f"Allowed choices are {', '.join(opt.choices)}.", 1)
        if opt.arity is Arity.VARIADIC:
            current = args.values.get(opt.dest)
            args.values[opt.dest] = [*(current if isinstance(current, list) else []), value]
        elif opt.repeatable:
            args.append(opt.dest, value)
        else:
            args.values[opt.dest] = value

    while words:
        word = words.pop(0)
        if word == "--":
            args.operands += words
            break
        if variadic is not None and not _maybe_option(word):
            store(variadic, word)
            continue
        variadic = None
        if _maybe_option(word):
            opt = _commander_find(word)
            if opt is not None:
                if opt.arity in (Arity.VALUE, Arity.VARIADIC):
                    if not words:
                        raise ArgvError(f"error: option '{opt.flags}' argument missing", 1)
                    store(opt, words.pop(0))
                    if opt.arity is Arity.VARIADIC:
                        variadic = opt
                elif opt.arity is Arity.OPTIONAL:
                    store(opt, words.pop(0) if words and not _maybe_option(words[0]) else True)
                else:
                    store(opt, True)
                continue
        if len(word) > 2 and word[0] == "-" and word[1] != "-":
            opt = _commander_find(word[:2])
            if opt is not None:
                if opt.arity is Arity.FLAG:
                    store(opt, True)
                    words.insert(0, "-" + word[2:])
                else:
                    store(opt, word[2:])
                continue
        if word.startswith("--") and "=" in word:
            opt = _commander_find(word.partition("=")[0])
            if opt is not None and opt.arity is not Arity.FLAG:
                store(opt, word.partition("=")[2])
                continue
        if _maybe_option(word):
            raise _commander_unknown(word)
        args.operands.append(word)
    if args.operands and args.operands[0] in CLAUDE_COMMANDS:
        raise ArgvError(f"fake_agent: `claude {args.operands[0]}` is a subcommand the fake "
                        "does not emulate", 2)
    args.prompt = args.operands[0] if args.operands else None
    _claude_checks(args)
    return args


def _claude_checks(args: CliArgs) -> None:
    """What Claude Code refuses after parsing and before its first request."""
    if args.get("help") or args.get("version"):
        return
    if args.get("continue_"):
        raise ArgvError("fake_agent: --continue is not emulated (the fake keeps no saved "
                        "sessions); give --resume SESSION_ID", 1)
    session_id = args.get("session_id")
    if isinstance(session_id, str) and session_id:
        if not _is_uuid(session_id):
            raise ArgvError("Error: Invalid session ID. Must be a valid UUID.", 1)
        if (args.get("resume") is not None or args.get("continue_")) \
                and not args.get("fork_session"):
            raise ArgvError("Error: --session-id can only be used with --continue or --resume "
                            "if --fork-session is also specified.", 1)
        args.session_id = session_id
    resume = args.get("resume")
    if resume is not None and not (isinstance(resume, str) and _is_uuid(resume)):
        # No picker and no session titles in the fake: as the real CLI in print mode.
        detail = "" if resume is True or resume == "" else (
            f". Provided value \"{resume}\" is not a UUID and does not match any session title")
        raise ArgvError("Error: --resume requires a valid session ID or session title when "
                        "used with --print. Usage: claude -p --resume <session-id|title>"
                        + detail + ("." if detail else ""), 1)
    settings = args.get("settings")
    if isinstance(settings, str) and not _json_object(settings) and \
            not Path(settings).is_file():
        raise ArgvError(f"Error: Settings file not found: {settings}", 1)
    problems = [problem for config in args.list_of("mcp_config")
                if (problem := mcp_config_problem(config))]
    if problems:
        raise ArgvError("Error: Invalid MCP configuration:\n" + "\n".join(problems), 1)


def mcp_config_problem(value: str) -> str | None:
    """Why one ``--mcp-config`` value (inline JSON or a file) is refused, or None."""
    document = _json_object(value)
    if document is None:
        path = Path(os.path.abspath(value))
        try:
            text = path.read_text(encoding="utf-8")
        except OSError:
            return f"MCP config file not found: {path}"
        try:
            document = json.loads(text)
        except ValueError:
            return "MCP config is not a valid JSON"
    if not isinstance(document, dict) or not isinstance(document.get("mcpServers"), dict):
        return 'mcpServers: Missing "mcpServers"'
    return None


def load_json_or_file(value: str) -> dict | None:
    """``--settings``/``--mcp-config``: inline JSON object or a JSON file (None: unreadable)."""
    document = _json_object(value)
    if document is not None:
        return document
    try:
        loaded = json.loads(Path(value).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return loaded if isinstance(loaded, dict) else None


def _json_object(value: str) -> dict | None:
    try:
        document = json.loads(value)
    except ValueError:
        return None
    return document if isinstance(document, dict) else None


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return len(value) == 36


# --- clap (Codex) ------------------------------------------------------------


def _clap_find(name: str, in_resume: bool, fork: bool = False) -> Opt | None:
    name = CODEX_SHORT.get(name, CODEX_ALIASES.get(name, name))
    opt = next((opt for opt in CODEX_OPTIONS if opt.long == name), None)
    if opt is None or (opt.resume_only and not in_resume) or (opt.not_fork and fork):
        return None
    return opt


def _clap_unexpected(word: str, in_resume: bool, fork: bool = False) -> ArgvError:
    usage = (CODEX_FORK_USAGE if fork else CODEX_RESUME_USAGE) if in_resume else CODEX_USAGE
    tip = f"\n\n  tip: to pass '{word}' as a value, use '-- {word}'" if word.startswith("-") \
        else ""
    return ArgvError(f"error: unexpected argument '{word}' found{tip}\n\n{usage}", 2)


def _clap_display(opt: Opt) -> str:
    """How clap names an argument in errors: ``--model <MODEL>``, ``--oss``."""
    return opt.flags


def parse_codex(argv: list[str]) -> CliArgs:
    """clap's derive parser for ``codex``, ``codex resume`` and ``codex fork``, then the
    ``-c`` checks."""
    args = CliArgs("codex")
    words = list(argv)
    in_resume = False
    fork = False
    seen: set[tuple[bool, str]] = set()
    top: list[str] = []
    sub: list[str] = []
    only_positional = False

    def store(opt: Opt, value: object) -> None:
        key = (in_resume, opt.dest)
        if key in seen and not opt.repeatable:
            usage = (CODEX_FORK_USAGE if fork else CODEX_RESUME_USAGE) if in_resume \
                else CODEX_USAGE
            raise ArgvError(f"error: the argument '{_clap_display(opt)}' cannot be used "
                            f"multiple times\n\n{usage}", 2)
        seen.add(key)
        if opt.choices and isinstance(value, str) and value not in opt.choices:
            raise ArgvError(f"error: invalid value '{value}' for '{_clap_display(opt)}'\n  "
                            f"[possible values: {', '.join(opt.choices)}]\n\n"
                            "For more information, try '--help'.", 2)
        if opt.repeatable:
            args.append(opt.dest, value)
        else:
            args.values[opt.dest] = value

    def take_value(opt: Opt, inline: str | None) -> None:
        if inline is not None:
            store(opt, inline)
            return
        if not words or (_maybe_option(words[0]) and words[0] != "-"):
            if words and _clap_find(words[0].split("=")[0], in_resume, fork) is None:
                raise _clap_unexpected(words[0], in_resume, fork)
            raise ArgvError(f"error: a value is required for '{_clap_display(opt)}' but none "
                            "was supplied\n\nFor more information, try '--help'.", 2)
        store(opt, words.pop(0))

    while words:
        word = words.pop(0)
        if not only_positional and word == "--":
            only_positional = True
            continue
        if not only_positional and word.startswith("--") and len(word) > 2:
            name, eq, inline = word.partition("=")
            opt = _clap_find(name, in_resume, fork)
            if opt is None:
                raise _clap_unexpected(word, in_resume, fork)
            if opt.arity is Arity.FLAG:
                if eq:
                    raise ArgvError(f"error: unexpected value '{inline}' for '{name}' found; "
                                    "no more were expected", 2)
                store(opt, True)
            else:
                take_value(opt, inline if eq else None)
            continue
        if not only_positional and _maybe_option(word):
            cluster = word[1:]
            while cluster:
                opt = _clap_find("-" + cluster[0], in_resume, fork)
                if opt is None:
                    raise _clap_unexpected("-" + cluster[0], in_resume, fork)
                if opt.arity is Arity.FLAG:
                    store(opt, True)
                    cluster = cluster[1:]
                    continue
                rest = cluster[1:]
                take_value(opt, (rest[1:] if rest.startswith("=") else rest) or None)
                break
            continue
        if not in_resume:
            if word in CODEX_COMMANDS and not only_positional:
                _codex_subcommand(word)
                in_resume, fork = True, word == "fork"
            elif top:
                raise ArgvError(f"error: unrecognized subcommand '{word}'\n\n{CODEX_USAGE}", 2)
            else:
                top.append(word)
            continue
        if len(sub) == 2:
            raise _clap_unexpected(word, True)
        sub.append(word)
    args.resume = in_resume and not fork
    args.fork = fork
    args.session_id = sub[0] if sub else None
    # `codex PROMPT resume ID` is accepted too: the subcommand's prompt wins.
    args.prompt = sub[1] if len(sub) > 1 else (top[0] if top else None)
    _codex_checks(args)
    return args


def _codex_subcommand(word: str) -> None:
    if word not in ("resume", "fork"):
        raise ArgvError(f"fake_agent: `codex {word}` is a subcommand the fake does not "
                        "emulate", 2)


def _codex_checks(args: CliArgs) -> None:
    """Codex's own checks after clap, before it looks at the terminal or a model."""
    if args.get("help") or args.get("version"):
        return
    for pair in args.list_of("config"):
        key, sep, _ = pair.partition("=")
        if not sep:
            raise ArgvError(f"Error parsing -c overrides: Invalid override (missing '='): "
                            f"{pair}", 1)
        if not key.strip():
            raise ArgvError(f"Error parsing -c overrides: Empty key in override: {pair}", 1)
    if args.resume and (args.session_id is None or args.get("last")):
        raise ArgvError("fake_agent: the resume picker and --last are not emulated; give "
                        "the SESSION_ID", 1)
    if args.resume and args.session_id is not None and not _is_uuid(args.session_id):
        raise ArgvError(f"fake_agent: resuming by session name ({args.session_id!r}) is not "
                        "emulated; give the session UUID", 1)
    if args.fork and (args.session_id is None or args.get("last")):
        raise ArgvError("fake_agent: the fork picker and --last are not emulated; give "
                        "the SESSION_ID", 1)
    if args.fork and args.session_id is not None and not _is_uuid(args.session_id):
        raise ArgvError(f"fake_agent: forking by session name ({args.session_id!r}) is not "
                        "emulated; give the session UUID", 1)


# --- yargs (Gemini CLI) ------------------------------------------------------


def _yargs_find(name: str) -> Opt | None:
    return next((opt for opt in GEMINI_OPTIONS if name in opt.names), None)


def parse_gemini(argv: list[str]) -> CliArgs:
    """yargs as Gemini CLI 0.61.0 configures it (strict): ``--opt value`` or
    ``--opt=value``; a value may start with ``-`` only in the ``=`` form; an unknown option
    is ``Unknown argument: NAME`` (exit 1); a missing value is ``Not enough arguments
    following: NAME`` (exit 1); the positional words are the query, joined by spaces.
    ``--session-id`` takes any word: the CLI does not check that it is a UUID."""
    args = CliArgs("gemini")
    words = list(argv)
    query: list[str] = []
    while words:
        word = words.pop(0)
        if word == "--":
            query += words
            break
        if not _maybe_option(word):
            query.append(word)
            continue
        name, has_value, inline = word.partition("=")
        opt = _yargs_find(name)
        if opt is None:
            raise ArgvError(f"Unknown argument: {name.lstrip('-')}", 1)
        if opt.arity is Arity.FLAG:
            args.values[opt.dest] = True
            continue
        if has_value:
            value = inline
        elif words and not _maybe_option(words[0]):
            value = words.pop(0)
        else:
            raise ArgvError(f"Not enough arguments following: {opt.long.lstrip('-')}", 1)
        if opt.choices and value not in opt.choices:
            raise ArgvError(f"Invalid values:\n  Argument: {opt.long.lstrip('-')}, Given: "
                            f"\"{value}\", Choices: "
                            + ", ".join(f'"{choice}"' for choice in opt.choices), 1)
        if opt.repeatable:
            args.append(opt.dest, value)
        else:
            args.values[opt.dest] = value
    if query and query[0] in GEMINI_COMMANDS:
        raise ArgvError(f"fake_agent: gemini {query[0]} is not emulated", 2)
    # its own checks, in its order (0.61.0 bundle, the yargs ``.check``)
    interactive = args.get("prompt_interactive")
    if sum(args.get(dest) is not None for dest in ("resume", "session_id", "session_file")) > 1:
        raise ArgvError("The flags --resume, --session-id, and --session-file are mutually "
                        "exclusive. Please provide only one.", 1)
    if args.get("print") and query:
        raise ArgvError("Cannot use both a positional prompt and the --prompt (-p) flag "
                        "together", 1)
    if args.get("print") and interactive:
        raise ArgvError("Cannot use both --prompt (-p) and --prompt-interactive (-i) "
                        "together", 1)
    if args.get("yolo") and args.get("approval_mode"):
        raise ArgvError("Cannot use both --yolo (-y) and --approval-mode together. Use "
                        "--approval-mode=yolo instead.", 1)
    args.operands = query
    args.prompt = interactive if isinstance(interactive, str) else (
        " ".join(query) if query else None)
    printed = args.get("print")
    if isinstance(printed, str):
        args.prompt = printed
    session = args.get("session_id")
    args.session_id = session if isinstance(session, str) else None
    return args


# --- yargs (OpenCode) ---------------------------------------------------------


def opencode_help() -> str:
    """The usage OpenCode prints (to stderr) for --help and for an argv it refuses."""
    lines = ["Commands:"]
    lines += [f"  opencode {command}  (emulated)" for command in OPENCODE_COMMANDS]
    lines += ["  opencode [project]  start opencode tui  [default]", "", "Options:"]
    lines += [f"  {opt.flags}" for opt in OPENCODE_OPTIONS if opt not in FAKE_OPTIONS]
    return "\n".join(lines)


def parse_opencode(argv: list[str]) -> CliArgs:
    """yargs as OpenCode 1.18.33 configures it (strict), measured against the binary: an
    unknown option, a value outside its choices or a second positional word prints the
    usage to stderr and exits 1, naming nothing; a separate word starting with ``-`` is
    never a value (``--prompt -x`` is an empty prompt and the unknown option ``-x``);
    ``--opt=value`` takes any value. ``--fork`` without ``--session`` or
    ``--continue`` is its own one-line refusal. A session id is checked when it is
    looked up (``core.providers.fake.opencode``), not here."""
    args = CliArgs("opencode")
    words = list(argv)
    positional: list[str] = []
    while words:
        word = words.pop(0)
        if word == "--":
            positional += words
            break
        if not _maybe_option(word):
            positional.append(word)
            continue
        name, has_value, inline = word.partition("=")
        opt = next((o for o in OPENCODE_OPTIONS if name in o.names), None)
        if opt is None:
            raise ArgvError(opencode_help(), 1)
        if opt.arity is Arity.FLAG:
            args.values[opt.dest] = True
            continue
        if has_value:
            value = inline
        elif words and not _maybe_option(words[0]):
            value = words.pop(0)
        else:
            value = ""  # yargs: no value is ""; a next word starting with - is an option
        if opt.choices and value not in opt.choices:
            raise ArgvError(opencode_help(), 1)
        if opt.repeatable:
            args.append(opt.dest, value)
        else:
            args.values[opt.dest] = value
    if positional and positional[0] in OPENCODE_COMMANDS:
        raise ArgvError(f"fake_agent: opencode {positional[0]} is not emulated", 2)
    if len(positional) > 1:
        raise ArgvError(opencode_help(), 1)
    if positional:
        raise ArgvError("fake_agent: opencode [project] (another folder) is not emulated; "
                        "start it in the project folder", 2)
    if args.get("fork") and not (args.get("session") or args.get("continue_")):
        raise ArgvError(f"{OPENCODE_ERROR}--fork requires --continue or --session", 1)
    if args.get("continue_") and not (args.get("help") or args.get("version")):
        raise ArgvError("fake_agent: opencode --continue (the last session) is not emulated; "
                        "give --session ID", 2)
    prompt = args.get("prompt")
    args.prompt = prompt if isinstance(prompt, str) and prompt else None
    session = args.get("session")
    args.session_id = session if isinstance(session, str) and session else None
    return args
