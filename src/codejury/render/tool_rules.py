"""What an analyzer's rule is, for the formats that describe rules: SARIF's rule descriptors, rdjson's
diagnostic code and source, Code Quality's check name.

A finding's ``evidence`` names each backing hit as ``analyzer:rule`` (``render.tool_rule`` splits it);
these tables add what the tool itself documents: the page that explains the rule (``help_uri``, only
for tools with a page per rule: ruff, shellcheck, hadolint, mypy, zizmor, oxlint), ruff's rule names
(its pages are named by them, not by code) and whether the rule is a security rule (the reviewer that
owns it in ``analyzers.domains``, the one table the review itself uses).
"""

from __future__ import annotations

from codejury.analyzers.domains import DOMAIN_TABLE, domain_by_words

SECURITY_SEVERITY: dict[str, str] = {"critical": "9.5", "warning": "6.5", "suggestion": "3.0"}
"""A security rule's ``security-severity`` (GitHub code scanning: above 9.0 critical, 7.0 to 8.9 high, 4.0 to 6.9
medium, below 4.0 low) from the most severe finding of the rule."""


def rule_domain(tool: str, rule: str) -> str:
    """The reviewer that owns ``tool``'s ``rule`` (``analyzers.domains``; a tool it does not list: by the words)."""
    for analyzer, prefix, domain in DOMAIN_TABLE:
        if tool == analyzer and rule.startswith(prefix):
            return domain
    return domain_by_words(rule)


def is_security_rule(tool: str, rule: str) -> bool:
    """Whether ``tool``'s ``rule`` is a security rule (its hits go to the security reviewer)."""
    return rule_domain(tool, rule) == "security"


def rule_name(tool: str, rule: str) -> str | None:
    """The rule's name where the tool gives one apart from its code (ruff: ``S608`` → ``hardcoded-sql-expression``)."""
    return RUFF_RULE_NAMES.get(rule) if tool == "ruff" else None


def help_uri(tool: str, rule: str) -> str | None:
    """The page where ``tool`` documents ``rule``, or None where it has none (or we do not know it)."""
    if tool == "ruff":
        name = RUFF_RULE_NAMES.get(rule)
        return f"https://docs.astral.sh/ruff/rules/{name}/" if name else None
    if tool == "shellcheck" or (tool == "hadolint" and rule.startswith("SC")):
        return f"https://www.shellcheck.net/wiki/{rule}" if rule[2:].isdigit() and rule.startswith("SC") else None
    if tool == "hadolint":
        return f"https://github.com/hadolint/hadolint/wiki/{rule}" if rule[2:].isdigit() and rule[:2] == "DL" else None
    if tool == "mypy":
        return f"https://mypy.rtfd.io/en/stable/_refs.html#code-{rule}" if _slug(rule) else None
    if tool == "zizmor":
        return f"https://docs.zizmor.sh/audits/#{rule}" if _slug(rule) else None
    if tool == "oxlint":
        plugin, _, name = rule.rpartition("/")
        plugin = plugin.removeprefix("eslint-plugin-").replace("-", "_") or "eslint"
        return f"https://oxc.rs/docs/guide/usage/linter/rules/{plugin}/{name}.html" if _slug(plugin + name) else None
    return None


def _slug(text: str) -> bool:
    return bool(text) and all(c.isascii() and (c.isalnum() or c in "-_") for c in text)


RUFF_RULE_NAMES: dict[str, str] = {
    "ASYNC100": "cancel-scope-no-checkpoint",
    "ASYNC105": "trio-sync-call",
    "ASYNC109": "async-function-with-timeout",
    "ASYNC110": "async-busy-wait",
    "ASYNC115": "async-zero-sleep",
    "ASYNC116": "long-sleep-not-forever",
    "ASYNC119": "yield-in-context-manager-in-async-generator",
    "ASYNC210": "blocking-http-call-in-async-function",
    "ASYNC212": "blocking-http-call-httpx-in-async-function",
    "ASYNC220": "create-subprocess-in-async-function",
    "ASYNC221": "run-process-in-async-function",
    "ASYNC222": "wait-for-process-in-async-function",
    "ASYNC230": "blocking-open-call-in-async-function",
    "ASYNC240": "blocking-path-method-in-async-function",
    "ASYNC250": "blocking-input-in-async-function",
    "ASYNC251": "blocking-sleep-in-async-function",
    "ASYNC401": "pytest-raises-exception-group",
    "B002": "unary-prefix-increment-decrement",
    "B003": "assignment-to-os-environ",
    "B004": "unreliable-callable-check",
    "B005": "strip-with-multi-characters",
    "B006": "mutable-argument-default",
    "B007": "unused-loop-control-variable",
    "B008": "function-call-in-default-argument",
    "B009": "get-attr-with-constant",
    "B010": "set-attr-with-constant",
    "B011": "assert-false",
    "B012": "jump-statement-in-finally",
    "B013": "redundant-tuple-in-exception-handler",
    "B014": "duplicate-handler-exception",
    "B015": "useless-comparison",
    "B016": "raise-literal",
    "B017": "assert-raises-exception",
    "B018": "useless-expression",
    "B019": "cached-instance-method",
    "B020": "loop-variable-overrides-iterator",
    "B021": "f-string-docstring",
    "B022": "useless-contextlib-suppress",
    "B023": "function-uses-loop-variable",
    "B024": "abstract-base-class-without-abstract-method",
    "B025": "duplicate-try-block-exception",
    "B026": "star-arg-unpacking-after-keyword-arg",
    "B027": "empty-method-without-abstract-decorator",
    "B028": "no-explicit-stacklevel",
    "B029": "except-with-empty-tuple",
    "B030": "except-with-non-exception-classes",
    "B031": "reuse-of-groupby-generator",
    "B032": "unintentional-type-annotation",
    "B033": "duplicate-value",
    "B034": "re-sub-positional-args",
    "B035": "static-key-dict-comprehension",
    "B039": "mutable-contextvar-default",
    "B043": "del-attr-with-constant",
    "B901": "return-in-generator",
    "B903": "class-as-data-structure",
    "B904": "raise-without-from-inside-except",
    "B905": "zip-without-explicit-strict",
    "B909": "loop-iterator-mutation",
    "B911": "batched-without-explicit-strict",
    "B912": "map-without-explicit-strict",
    "F401": "unused-import",
    "F501": "percent-format-invalid-format",
    "F502": "percent-format-expected-mapping",
    "F503": "percent-format-expected-sequence",
    "F504": "percent-format-extra-named-arguments",
    "F505": "percent-format-missing-argument",
    "F506": "percent-format-mixed-positional-and-named",
    "F507": "percent-format-positional-count-mismatch",
    "F508": "percent-format-star-requires-sequence",
    "F509": "percent-format-unsupported-format-character",
    "F632": "is-literal",
    "F821": "undefined-name",
    "F822": "undefined-export",
    "F823": "undefined-local",
    "PLE0100": "yield-in-init",
    "PLE0101": "return-in-init",
    "PLE0115": "nonlocal-and-global",
    "PLE0116": "continue-in-finally",
    "PLE0117": "nonlocal-without-binding",
    "PLE0118": "load-before-global-declaration",
    "PLE0211": "no-method-argument",
    "PLE0237": "non-slot-assignment",
    "PLE0241": "duplicate-bases",
    "PLE0302": "unexpected-special-method-signature",
    "PLE0303": "invalid-length-return-type",
    "PLE0304": "invalid-bool-return-type",
    "PLE0305": "invalid-index-return-type",
    "PLE0307": "invalid-str-return-type",
    "PLE0308": "invalid-bytes-return-type",
    "PLE0309": "invalid-hash-return-type",
    "PLE0604": "invalid-all-object",
    "PLE0605": "invalid-all-format",
    "PLE0643": "potential-index-error",
    "PLE0704": "misplaced-bare-raise",
    "PLE1132": "repeated-keyword-argument",
    "PLE1141": "dict-iter-missing-items",
    "PLE1142": "await-outside-async",
    "PLE1205": "logging-too-many-args",
    "PLE1206": "logging-too-few-args",
    "PLE1300": "bad-string-format-character",
    "PLE1307": "bad-string-format-type",
    "PLE1310": "bad-str-strip-call",
    "PLE1507": "invalid-envvar-value",
    "PLE1519": "singledispatch-method",
    "PLE1520": "singledispatchmethod-function",
    "PLE1700": "yield-from-in-async-function",
    "PLE2502": "bidirectional-unicode",
    "PLE2510": "invalid-character-backspace",
    "PLE2512": "invalid-character-sub",
    "PLE2513": "invalid-character-esc",
    "PLE2514": "invalid-character-nul",
    "PLE2515": "invalid-character-zero-width-space",
    "PLE4703": "modified-iterating-set",
    "RUF006": "asyncio-dangling-task",
    "S101": "assert",
    "S102": "exec-builtin",
    "S103": "bad-file-permissions",
    "S104": "hardcoded-bind-all-interfaces",
    "S105": "hardcoded-password-string",
    "S106": "hardcoded-password-func-arg",
    "S107": "hardcoded-password-default",
    "S108": "hardcoded-temp-file",
    "S110": "try-except-pass",
    "S112": "try-except-continue",
    "S113": "request-without-timeout",
    "S201": "flask-debug-true",
    "S202": "tarfile-unsafe-members",
    "S301": "suspicious-pickle-usage",
    "S302": "suspicious-marshal-usage",
    "S303": "suspicious-insecure-hash-usage",
    "S304": "suspicious-insecure-cipher-usage",
    "S305": "suspicious-insecure-cipher-mode-usage",
    "S306": "suspicious-mktemp-usage",
    "S307": "suspicious-eval-usage",
    "S308": "suspicious-mark-safe-usage",
    "S310": "suspicious-url-open-usage",
    "S311": "suspicious-non-cryptographic-random-usage",
    "S312": "suspicious-telnet-usage",
    "S313": "suspicious-xmlc-element-tree-usage",
    "S314": "suspicious-xml-element-tree-usage",
    "S315": "suspicious-xml-expat-reader-usage",
    "S316": "suspicious-xml-expat-builder-usage",
    "S317": "suspicious-xml-sax-usage",
    "S318": "suspicious-xml-mini-dom-usage",
    "S319": "suspicious-xml-pull-dom-usage",
    "S321": "suspicious-ftp-lib-usage",
    "S323": "suspicious-unverified-context-usage",
    "S324": "hashlib-insecure-hash-function",
    "S401": "suspicious-telnetlib-import",
    "S402": "suspicious-ftplib-import",
    "S403": "suspicious-pickle-import",
    "S404": "suspicious-subprocess-import",
    "S405": "suspicious-xml-etree-import",
    "S406": "suspicious-xml-sax-import",
    "S407": "suspicious-xml-expat-import",
    "S408": "suspicious-xml-minidom-import",
    "S409": "suspicious-xml-pulldom-import",
    "S411": "suspicious-xmlrpc-import",
    "S412": "suspicious-httpoxy-import",
    "S413": "suspicious-pycrypto-import",
    "S415": "suspicious-pyghmi-import",
    "S501": "request-with-no-cert-validation",
    "S502": "ssl-insecure-version",
    "S503": "ssl-with-bad-defaults",
    "S504": "ssl-with-no-version",
    "S505": "weak-cryptographic-key",
    "S506": "unsafe-yaml-load",
    "S507": "ssh-no-host-key-verification",
    "S508": "snmp-insecure-version",
    "S509": "snmp-weak-cryptography",
    "S601": "paramiko-call",
    "S602": "subprocess-popen-with-shell-equals-true",
    "S603": "subprocess-without-shell-equals-true",
    "S604": "call-with-shell-equals-true",
    "S605": "start-process-with-a-shell",
    "S606": "start-process-with-no-shell",
    "S607": "start-process-with-partial-path",
    "S608": "hardcoded-sql-expression",
    "S609": "unix-command-wildcard-injection",
    "S610": "django-extra",
    "S611": "django-raw-sql",
    "S612": "logging-config-insecure-listen",
    "S701": "jinja2-autoescape-false",
    "S702": "mako-templates",
    "S704": "unsafe-markup-use",
}
"""ruff's rule names for the rules the ruff analyzer selects (``analyzers.ruff.SELECT``), from ``ruff rule --all``."""
