"""Our ast-grep rule pack: each classic defect found on added lines, in each language, and safe code left alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from codejury.analyzers import AnalyzerSkipped
from codejury.analyzers.rules import RulePackAnalyzer
from tests.analyzers.helpers import hits, make_change

CASES = {
    "app/db.py": (
        "def f(conn, term, code, cmd, password):\n"
        "    conn.execute('SELECT * FROM t WHERE id = ?', (term,))\n"
        "    conn.execute(f\"SELECT id FROM products WHERE name LIKE '%{term}%'\")\n"
        "    eval(code)\n"
        "    subprocess.run(cmd, shell=True)\n"
        "    requests.get(url, verify=False)\n"
        "    return hashlib.md5(password.encode()).hexdigest()\n",
        {
            "py-sql-built-from-strings": 3,
            "py-eval-of-dynamic-code": 4,
            "py-shell-command-from-input": 5,
            "py-tls-verification-disabled": 6,
            "py-weak-password-hash": 7,
        },
    ),
    "app/report.py": (
        "def report(conn, orders, cache):\n"
        "    rows = []\n"
        "    for order in load_orders(conn):\n"
        "        customer = get_customer(conn, order['customer_id'])\n"
        "        total = cache.get(order['id'])\n"
        "        rows.append((customer, total))\n"
        "    return rows\n",
        {"perf-py-query-in-loop": 4},
    ),
    "web/search.js": (
        "function r(query, db, cmd) {\n"
        "  heading.textContent = query;\n"
        "  heading.innerHTML = `results for <b>${query}</b>`;\n"
        "  db.query(`SELECT * FROM users WHERE name = '${query}'`);\n"
        "  exec(`ls ${cmd}`);\n"
        "  const agent = new https.Agent({ rejectUnauthorized: false });\n"
        "}\n",
        {
            "js-html-from-input": 3,
            "js-sql-built-from-strings": 4,
            "js-shell-command-from-input": 5,
            "js-tls-verification-disabled": 6,
        },
    ),
    "src/render.ts": (
        "export function show(el: HTMLElement, q: string): void {\n  el.innerHTML = q;\n}\n",
        {"js-html-from-input": 2},
    ),
    "src/if.js": (
        "export function pick(node, index) {\n"
        "  var anchor = node;\n"
        "  let n = parseInt(index, 10);\n"
        "  if (isNaN(n)) return null;\n"
        '  const kind = n > 1 ? "many" : n === 1 ? "one" : "none";\n'
        '  const mode = node.yolo || false ? "yolo" : "default";\n'
        '  console.log("token", node.token);\n'
        '  console.log("ok", node.tokenCount, `${node.name}`);\n'
        "  return Number.isNaN(n) ? null : kind + mode;\n}\n",
        {
            "quality-js-var-declaration": 2,
            "quality-js-global-isnan": 4,
            "quality-js-nested-ternary": 5,
            "quality-js-boolean-literal-in-ternary-condition": 6,
            "js-secret-written-to-log": 7,
        },
    ),
    "src/merge.ts": (
        "export function merge(extra?: string[] | undefined, other?: string[]): string[] {\n"
        "  const out = (extra as unknown as string[]) ?? [];\n"
        "  const data = JSON.parse(raw) as any;\n"
        "  const seen: Record<string, unknown> = {};\n"
        "  return out;\n}\n",
        {
            "quality-ts-optional-parameter-or-undefined": 1,
            "quality-ts-double-cast": 2,
            "quality-ts-explicit-any": 3,
        },
    ),
    "src/merge.test.ts": (  # fakes in tests are built with `any` and double casts
        "const config = {} as unknown as Config;\nconst tool: any = makeTool();\n",
        {},
    ),
    "internal/swap.go": (
        "package swap\n\nfunc f(token *Token, err error) error {\n"
        '\tlog.Printf("sending token: %s", token.Token)\n'
        '\tlog.Printf("used %d tokens", tokenCount)\n'
        "\tif err == fs.ErrNotExist {\n\t\treturn nil\n\t}\n"
        "\tif errors.Is(err, fs.ErrNotExist) || err != nil {\n\t\treturn err\n\t}\n"
        '\treturn fmt.Errorf("bad token %s", token.Token)\n}\n',
        {"go-secret-written-to-log": 4, "quality-go-error-compared-with-eq": 6},
    ),
    "app/auth.py": (
        "def login(user, password):\n"
        '    logger.info("login %s with %s", user, password)\n'
        '    print(f"user {user.name}")\n'
        '    logging.debug("tokens used: %d", token_count)\n',
        {"py-secret-written-to-log": 2},
    ),
    "internal/api.go": (
        "package api\n\nfunc f(db *sql.DB, name string, r *http.Request) {\n"
        "\tq := fmt.Sprintf(\"SELECT id FROM users WHERE name = '%s'\", name)\n"
        "\tcfg := &tls.Config{InsecureSkipVerify: true}\n"
        "\tjson.NewDecoder(r.Body).Decode(&req)\n"
        '\tdb.Query("SELECT id FROM users WHERE name = $1", name)\n}\n',
        {"go-sql-built-from-strings": 4, "go-tls-verification-disabled": 5, "quality-go-ignored-decode-error": 6},
    ),
    "src/Q.java": (
        "class Q {\n  void f(Statement st, String name) throws Exception {\n"
        '    st.executeQuery("SELECT * FROM users WHERE name = \'" + name + "\'");\n'
        '    MessageDigest md = MessageDigest.getInstance("MD5");\n'
        "    for (String line : lines) { Pattern p = Pattern.compile(glob); }\n  }\n}\n",
        {"java-sql-built-from-strings": 3, "java-weak-hash": 4, "perf-java-pattern-compile-in-loop": 5},
    ),
    "src/Auth.php": (
        "<?php\nfunction reset($id, $newPassword, $db) {\n"
        "    $db->update($id, md5($newPassword));\n"
        '    $db->query("SELECT * FROM users WHERE id = $id");\n}\n',
        {"php-weak-password-hash": 3, "php-sql-built-from-strings": 4},
    ),
    "src/dedupe.rs": (
        "pub fn unique(ids: &[String]) -> Vec<String> {\n"
        "    let mut out: Vec<String> = Vec::new();\n"
        "    let mut seen = HashSet::new();\n"
        "    for id in ids {\n"
        "        if !out.contains(id) {\n"
        "            out.push(id.clone());\n"
        "        }\n"
        "        if !seen.contains(id) {\n"
        "            seen.insert(id.clone());\n"
        "        }\n"
        "    }\n"
        "    let n: usize = std::env::args().nth(1).unwrap().parse().unwrap();\n"
        '    let m = "3".parse::<u32>().unwrap_or(3);\n'
        "    out\n}\n\n"
        "#[cfg(test)]\nmod tests {\n    #[test]\n    fn t() {\n"
        '        let n: u32 = "3".parse().unwrap();\n    }\n}\n',
        {"perf-rust-vec-contains-in-loop": 5, "quality-rust-unwrap-on-parse": 12},
    ),
    "src/Feeds.java": (
        "class Feeds {\n"
        "  long a(Path p) throws IOException {\n"
        "    BufferedReader r = Files.newBufferedReader(p);\n"
        "    return r.lines().count();\n  }\n"
        "  long b(Path p) throws IOException {\n"
        "    try (BufferedReader r = Files.newBufferedReader(p)) { return r.lines().count(); }\n  }\n"
        "  void c(File f) throws IOException {\n"
        "    FileInputStream in = new FileInputStream(f);\n"
        "    try { in.read(); } finally { in.close(); }\n  }\n"
        "  BufferedReader d(Path p) throws IOException {\n"
        "    BufferedReader r = Files.newBufferedReader(p);\n"
        "    return r;\n  }\n"
        "  String e() throws IOException {\n"
        "    BufferedReader r = new BufferedReader(new InputStreamReader(System.in));\n"
        "    return r.readLine();\n  }\n}\n",
        {"quality-java-resource-not-closed": 3},
    ),
    "billing/reports.py": (
        "def by_manager(invoices):\n"
        "    out = {}\n"
        "    for invoice in invoices:\n"
        "        customer = Customer.objects.get(pk=invoice.customer_id)\n"
        "        manager = AccountManager.objects.get(pk=customer.manager_id)\n"
        "        out[manager.email] = customer.name\n"
        "    ids = Customer.objects.filter(active=True)\n"
        "    return out\n",
        {"perf-py-query-in-loop": 4},
    ),
}


@pytest.mark.parametrize("path", sorted(CASES))
async def test_each_language_finds_its_planted_defects_and_nothing_else(tmp_path: Path, path: str) -> None:
    text, expected = CASES[path]
    evidence = await RulePackAnalyzer().analyze(make_change(tmp_path, {path: ("", text)}))
    assert hits(evidence) == {(rule, path, line) for rule, line in expected.items()}


async def test_two_queries_on_consecutive_lines_of_a_loop_are_one_hit(tmp_path: Path) -> None:
    text, _ = CASES["billing/reports.py"]
    evidence = await RulePackAnalyzer().analyze(make_change(tmp_path, {"billing/reports.py": ("", text)}))
    assert [(e.start_line, e.end_line) for e in evidence] == [(4, 5)]


async def test_defects_on_unchanged_lines_are_not_reported(tmp_path: Path) -> None:
    old = "def f(conn, term):\n    conn.execute(f\"SELECT id FROM t WHERE name = '{term}'\")\n"
    new = old + "\n\ndef g(code):\n    return eval(code)\n"
    evidence = await RulePackAnalyzer().analyze(make_change(tmp_path, {"a.py": (old, new)}))
    assert hits(evidence) == {("py-eval-of-dynamic-code", "a.py", 6)}
    assert evidence[0].severity == "critical" and evidence[0].analyzer == "rules"


async def test_missing_ast_grep_is_a_skip(tmp_path: Path) -> None:
    change = make_change(tmp_path, {"a.py": ("", "x = 1\n")})
    with pytest.raises(AnalyzerSkipped, match="ast-grep is not installed"):
        await RulePackAnalyzer(binary=tmp_path / "nope").analyze(change)
