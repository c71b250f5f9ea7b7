/* test_net_rules.c: the network rules (net_rules.c) as the policy's network section makes
 * them: host, port, scheme, method and path matching, strictest wins, the default, the
 * connection-level verdict before a request is read, path normalisation, and the lookups
 * the gateway and the DNS stub use. Also the section's diagnostics. */
#include "net_rules.h"
#include "policy.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static const pdk_policy_context ctx = {.home = "/home/u"};

static const char issue_policy[] = "version: 1\n"
                                   "network:\n"
                                   "  default: deny\n"
                                   "  rules:\n"
                                   "    - host: open.feishu.cn\n"
                                   "      methods: [GET]\n"
                                   "      path: /open-apis/bitable/v1/apps/bascExample/**\n"
                                   "      decision: allow\n"
                                   "    - host: open.feishu.cn\n"
                                   "      methods: [POST, PUT, PATCH]\n"
                                   "      decision: ask\n"
                                   "    - host: open.feishu.cn\n"
                                   "      methods: [DELETE]\n"
                                   "      decision: deny\n"
                                   "      reason: never delete\n"
                                   "    - host: \"*.npmjs.org\"\n"
                                   "      decision: allow\n"
                                   "    - host: git.internal.example\n"
                                   "      port: 8443\n"
                                   "      decision: allow\n"
                                   "  passthrough: [registry.example.org]\n"
                                   "  resolve: {\"open.feishu.cn:443\": \"127.0.0.1:18443\"}\n"
                                   "  upstream_ca: [/etc/test-ca.pem]\n";

static pdk_policy *parse_ok(const char *text)
{
    pdk_policy *p = NULL;
    pdk_policy_diags diags = {0};
    pdk_error err = {0};
    int r = pdk_policy_parse("policy.yaml", text, strlen(text), &ctx, &p, &diags, &err);
    for (size_t i = 0; i < diags.count; i++) {
        char *line = pdk_policy_diag_format(&diags.items[i]);
        print_error("unexpected diagnostic: %s\n", line);
        free(line);
    }
    pdk_policy_diags_free(&diags);
    assert_int_equal(r, 0);
    return p;
}

/* The diagnostics of text that must fail, one per line. */
static char *parse_fail(const char *text)
{
    pdk_policy *p = NULL;
    pdk_policy_diags diags = {0};
    pdk_error err = {0};
    assert_int_equal(pdk_policy_parse("policy.yaml", text, strlen(text), &ctx, &p, &diags, &err),
                     -1);
    pdk_buf b = {0};
    for (size_t i = 0; i < diags.count; i++) {
        char *line = pdk_policy_diag_format(&diags.items[i]);
        pdk_buf_printf(&b, "%s\n", line);
        free(line);
    }
    pdk_policy_diags_free(&diags);
    return pdk_buf_steal(&b);
}

static pdk_net_verdict judge(const pdk_policy *p, const char *scheme, const char *host,
                             uint16_t port, const char *method, const char *path)
{
    pdk_net_request req = {scheme, host, port, method, path};
    pdk_net_verdict v;
    pdk_net_rules_judge(&p->network, &req, &v);
    return v;
}

static void test_requests(void **state)
{
    pdk_policy *p = parse_ok(issue_policy);
    assert_true(p->network.enabled);
    pdk_net_verdict v = judge(p, "https", "open.feishu.cn", 443, "GET",
                              "/open-apis/bitable/v1/apps/bascExample/tables/t1/records");
    assert_int_equal(v.decision, PDK_DECISION_ALLOW);
    assert_int_equal(v.rule, 0);
    assert_int_equal(v.scope, PDK_NET_DECIDED);
    /* the directory itself too */
    v = judge(p, "https", "open.feishu.cn", 443, "GET", "/open-apis/bitable/v1/apps/bascExample");
    assert_int_equal(v.decision, PDK_DECISION_ALLOW);
    /* another app: no rule, the default */
    v = judge(p, "https", "open.feishu.cn", 443, "GET", "/open-apis/bitable/v1/apps/bascOther/x");
    assert_int_equal(v.decision, PDK_DECISION_DENY);
    assert_int_equal(v.rule, -1);
    assert_non_null(strstr(v.reason, "network.default"));
    v = judge(p, "https", "open.feishu.cn", 443, "POST", "/open-apis/im/v1/messages");
    assert_int_equal(v.decision, PDK_DECISION_ASK);
    assert_int_equal(v.rule, 1);
    v = judge(p, "https", "open.feishu.cn", 443, "DELETE",
              "/open-apis/bitable/v1/apps/bascExample/tables/t1/records/r1");
    assert_int_equal(v.decision, PDK_DECISION_DENY);
    assert_int_equal(v.rule, 2);
    assert_string_equal(v.reason, "never delete");
    v = judge(p, "https", "registry.npmjs.org", 443, "GET", "/left-pad");
    assert_int_equal(v.decision, PDK_DECISION_ALLOW);
    assert_int_equal(v.rule, 3);
    v = judge(p, "https", "npmjs.org", 443, "GET", "/");
    assert_int_equal(v.decision, PDK_DECISION_DENY);
    v = judge(p, "https", "git.internal.example", 8443, "GET", "/repo.git/info/refs");
    assert_int_equal(v.decision, PDK_DECISION_ALLOW);
    v = judge(p, "https", "git.internal.example", 443, "GET", "/");
    assert_int_equal(v.decision, PDK_DECISION_DENY);
    pdk_policy_free(p);
}

static void test_strictest_wins(void **state)
{
    pdk_policy *p = parse_ok("version: 1\n"
                             "network:\n"
                             "  default: allow\n"
                             "  rules:\n"
                             "    - {host: \"*\", methods: [POST], decision: ask}\n"
                             "    - {host: api.example.com, decision: allow}\n"
                             "    - {host: \"*.example.com\", path: /admin/**, decision: deny}\n"
                             "    - {host: api.example.com, scheme: http, decision: deny}\n");
    pdk_net_verdict v = judge(p, "https", "api.example.com", 443, "POST", "/x");
    assert_int_equal(v.decision, PDK_DECISION_ASK);
    assert_int_equal(v.rule, 0);
    v = judge(p, "https", "api.example.com", 443, "GET", "/admin/users");
    assert_int_equal(v.decision, PDK_DECISION_DENY);
    assert_int_equal(v.rule, 2);
    v = judge(p, "http", "api.example.com", 80, "GET", "/");
    assert_int_equal(v.decision, PDK_DECISION_DENY);
    assert_int_equal(v.rule, 3);
    v = judge(p, "https", "other.org", 443, "GET", "/");
    assert_int_equal(v.decision, PDK_DECISION_ALLOW);
    assert_int_equal(v.rule, -1);
    pdk_policy_free(p);
}

static void test_connection_level(void **state)
{
    pdk_policy *p = parse_ok(issue_policy);
    /* open.feishu.cn: allowed, asked or denied depending on the request: read each one */
    pdk_net_verdict v = judge(p, "https", "open.feishu.cn", 443, NULL, NULL);
    assert_int_equal(v.scope, PDK_NET_PER_REQUEST);
    assert_int_equal(v.decision, PDK_DECISION_DENY);
    /* every request allowed */
    v = judge(p, "https", "registry.npmjs.org", 443, NULL, NULL);
    assert_int_equal(v.scope, PDK_NET_DECIDED);
    assert_int_equal(v.decision, PDK_DECISION_ALLOW);
    assert_int_equal(v.rule, 3);
    /* no rule: refused before anything is read */
    v = judge(p, "https", "evil.example", 443, NULL, NULL);
    assert_int_equal(v.scope, PDK_NET_DECIDED);
    assert_int_equal(v.decision, PDK_DECISION_DENY);
    assert_int_equal(v.rule, -1);
    /* scheme unknown (a captured connection before its first bytes): a rule for one
     * scheme only is not enough to decide */
    pdk_policy *q = parse_ok("version: 1\nnetwork:\n  rules:\n"
                             "    - {host: a.example, scheme: https, decision: allow}\n");
    v = judge(q, NULL, "a.example", 443, NULL, NULL);
    assert_int_equal(v.scope, PDK_NET_PER_REQUEST);
    v = judge(q, "https", "a.example", 443, NULL, NULL);
    assert_int_equal(v.scope, PDK_NET_DECIDED);
    assert_int_equal(v.decision, PDK_DECISION_ALLOW);
    /* a host-wide deny decides, whatever partial rules say */
    pdk_policy *r = parse_ok("version: 1\nnetwork:\n  rules:\n"
                             "    - {host: b.example, methods: [GET], decision: allow}\n"
                             "    - {host: b.example, decision: deny}\n");
    v = judge(r, "https", "b.example", 443, NULL, NULL);
    assert_int_equal(v.scope, PDK_NET_DECIDED);
    assert_int_equal(v.decision, PDK_DECISION_DENY);
    assert_int_equal(v.rule, 1);
    pdk_policy_free(p);
    pdk_policy_free(q);
    pdk_policy_free(r);
}

static void test_hosts(void **state)
{
    assert_true(pdk_net_host_matches("*.npmjs.org", "registry.npmjs.org"));
    assert_true(pdk_net_host_matches("*.npmjs.org", "a.b.npmjs.org"));
    assert_false(pdk_net_host_matches("*.npmjs.org", "npmjs.org"));
    assert_false(pdk_net_host_matches("*.npmjs.org", "evilnpmjs.org"));
    assert_true(pdk_net_host_matches("*", "anything.example"));
    assert_false(pdk_net_host_matches("a.example", "b.a.example"));
    const char *why;
    char *h = pdk_net_host_pattern_normalize("Open.Feishu.CN.", &why);
    assert_string_equal(h, "open.feishu.cn");
    free(h);
    h = pdk_net_host_pattern_normalize("[::1]", &why);
    assert_string_equal(h, "::1");
    free(h);
    const char *bad[] = {"", "*.", "a.*.b", "https://a.b", "a.b/x", "a..b", ".a", "a b"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++) {
        h = pdk_net_host_pattern_normalize(bad[i], &why);
        if (h)
            fail_msg("\"%s\" accepted as \"%s\"", bad[i], h);
        assert_non_null(why);
    }
}

static void test_paths(void **state)
{
    assert_true(pdk_net_path_matches("/a/*/c", "/a/b/c"));
    assert_false(pdk_net_path_matches("/a/*/c", "/a/b/x/c"));
    assert_true(pdk_net_path_matches("/a/**", "/a/b/x/c"));
    assert_true(pdk_net_path_matches("/a/**", "/a"));
    assert_true(pdk_net_path_matches("/a/**", "/a/"));
    assert_false(pdk_net_path_matches("/a/**", "/ab"));
    assert_true(pdk_net_path_matches("/a/**/z", "/a/b/c/z"));
    assert_true(pdk_net_path_matches("/v1/*.json", "/v1/x.json"));
    assert_false(pdk_net_path_matches("/v1/*.json", "/v1/x.json/y"));
    assert_true(pdk_net_path_matches("/exact", "/exact"));
    assert_false(pdk_net_path_matches("/exact", "/exact/"));
    /* "*" does not stretch over an encoded slash or backslash */
    assert_false(pdk_net_path_matches("/apps/*/records", "/apps/x%2Fy/records"));
    assert_false(pdk_net_path_matches("/apps/*/records", "/apps/x%5Cy/records"));
    assert_true(pdk_net_path_matches("/apps/*/records", "/apps/x%20y/records"));
}

static void normalizes(const char *target, const char *want_path, const char *want_query)
{
    const char *why = NULL;
    char *query = NULL;
    char *path = pdk_net_path_normalize(target, &query, &why);
    if (!path)
        fail_msg("%s refused: %s", target, why);
    assert_string_equal(path, want_path);
    if (want_query)
        assert_string_equal(query, want_query);
    else
        assert_null(query);
    free(path);
    free(query);
}

static void refuses(const char *target)
{
    const char *why = NULL;
    char *query = NULL;
    char *path = pdk_net_path_normalize(target, &query, &why);
    if (path)
        fail_msg("%s accepted as %s", target, path);
    assert_non_null(why);
    assert_null(query);
}

static void test_path_normalize(void **state)
{
    normalizes("/", "/", NULL);
    normalizes("/a/./b/../c", "/a/c", NULL);
    normalizes("/a/b/..", "/a/", NULL);
    normalizes("/..", "/", NULL);
    normalizes("/../../etc/passwd", "/etc/passwd", NULL);
    normalizes("/%61%62%7e", "/ab~", NULL);
    normalizes("/a/%2e%2e/b", "/b", NULL); /* encoded dots are dots */
    normalizes("/@scope%2fpkg", "/@scope%2Fpkg", NULL);
    normalizes("/p?x=1&y=2", "/p", "x=1&y=2");
    normalizes("/p?", "/p", "");
    normalizes("/p#frag", "/p", NULL);
    refuses("x");
    refuses("");
    refuses("*");
    refuses("/a%zz");
    refuses("/a%4");
    refuses("/a%00b");
    refuses("/a b");
    refuses("/a%2F..%2Fb");
    refuses("/a%2f%2e%2e%2fb");
    refuses("/a\\..\\b");
    refuses("/a/..%5Cb");
}

/* Path parameters in dot segments: servers that strip parameters (Tomcat, Jetty, Spring)
 * serve "/v1/..;/admin/x" as "/admin/x", so that is the path the rules see. */
static void test_path_parameters(void **state)
{
    normalizes("/v1/..;/admin/x", "/admin/x", NULL);
    normalizes("/..;jsessionid=1/", "/", NULL);
    normalizes("/v1/%2e%2e;/admin/x", "/admin/x", NULL); /* %2e%2e; */
    normalizes("/v1/%2E%2E%3B/admin/x", "/admin/x", NULL);
    normalizes("/v1/..%3bx=1/admin", "/admin", NULL);
    normalizes("/a/.;x/b", "/a/b", NULL);
    normalizes("/a/b/..;", "/a/", NULL);
    normalizes("/a/...;/b", "/a/...;/b", NULL); /* three dots: a name */
    normalizes("/a;x/b", "/a;x/b", NULL);       /* a name with parameters stays */
    normalizes("/a/..x;/b", "/a/..x;/b", NULL);
    refuses("/a%2F..;%2Fb");
    refuses("/a\\..;x\\b");

    char *bare = pdk_net_path_without_parameters("/admin;x=1/y;z");
    assert_string_equal(bare, "/admin/y");
    free(bare);
    bare = pdk_net_path_without_parameters("/a/b;x/..;y/c");
    assert_string_equal(bare, "/a/c");
    free(bare);
    bare = pdk_net_path_without_parameters("/");
    assert_string_equal(bare, "/");
    free(bare);

    /* Judged both ways, the stricter holds: "/admin;x/y" is "/admin/y" to such servers. */
    pdk_policy *p = parse_ok("version: 1\n"
                             "network:\n"
                             "  default: allow\n"
                             "  rules:\n"
                             "    - {host: api.test, path: /v1/**, decision: allow}\n"
                             "    - {host: api.test, path: /admin/**, decision: deny}\n");
    const char *why = NULL;
    char *path = pdk_net_path_normalize("/v1/..;/admin/x", NULL, &why);
    assert_int_equal(judge(p, "http", "api.test", 80, "GET", path).decision, PDK_DECISION_DENY);
    free(path);
    assert_int_equal(judge(p, "http", "api.test", 80, "GET", "/admin;x/y").decision,
                     PDK_DECISION_DENY);
    assert_int_equal(judge(p, "http", "api.test", 80, "GET", "/admin%3Bx/y").decision,
                     PDK_DECISION_DENY);
    pdk_net_verdict v = judge(p, "http", "api.test", 80, "GET", "/v1/a;jsessionid=1");
    assert_int_equal(v.decision, PDK_DECISION_ALLOW);
    assert_int_equal(v.rule, 0);
    pdk_policy_free(p);
}

/* The host's loopback: only host_loopback rules reach it; lint warns about bare ones. */
static void test_host_loopback(void **state)
{
    pdk_policy *p =
        parse_ok("version: 1\n"
                 "network:\n"
                 "  rules:\n"
                 "    - {host: 127.0.0.1, port: 5432, decision: allow, host_loopback: true}\n"
                 "    - {host: 127.0.0.1, port: 8080, decision: allow}\n"
                 "    - {host: localhost, path: /api/**, decision: ask, host_loopback: true}\n"
                 "    - {host: \"::1\", decision: deny, host_loopback: true}\n"
                 "    - {host: 0.0.0.0, decision: allow}\n"
                 "    - {host: app.localhost, decision: allow}\n"
                 "    - {host: 10.0.0.5, decision: allow}\n");
    const pdk_net_rules *n = &p->network;
    pdk_net_request req = {"http", "127.0.0.1", 5432, "GET", "/"};
    assert_true(pdk_net_rules_host_loopback(n, &req));
    req.port = 8080; /* a bare rule for that port does not count */
    assert_false(pdk_net_rules_host_loopback(n, &req));
    req = (pdk_net_request){"http", "localhost", 80, "POST", "/api/x"};
    assert_true(pdk_net_rules_host_loopback(n, &req));
    req.path = "/other";
    assert_false(pdk_net_rules_host_loopback(n, &req));
    req = (pdk_net_request){"https", "localhost", 443, NULL, NULL}; /* connection level */
    assert_true(pdk_net_rules_host_loopback(n, &req));
    req = (pdk_net_request){"http", "::1", 80, "GET", "/"}; /* a deny rule reaches nothing */
    assert_false(pdk_net_rules_host_loopback(n, &req));

    assert_true(pdk_net_host_is_loopback("127.0.0.1"));
    assert_true(pdk_net_host_is_loopback("127.1.2.3"));
    assert_true(pdk_net_host_is_loopback("::1"));
    assert_true(pdk_net_host_is_loopback("::ffff:127.0.0.1"));
    assert_true(pdk_net_host_is_loopback("0.0.0.0"));
    assert_true(pdk_net_host_is_loopback("localhost"));
    assert_true(pdk_net_host_is_loopback("app.localhost"));
    assert_false(pdk_net_host_is_loopback("10.0.0.5"));
    assert_false(pdk_net_host_is_loopback("notlocalhost"));
    assert_false(pdk_net_host_is_loopback("localhost.example"));

    pdk_policy_diags w;
    pdk_policy_warnings(p, &w);
    assert_int_equal(w.count, 3); /* rules 1, 4 and 5: 8080, 0.0.0.0, app.localhost */
    assert_int_equal(w.items[0].line, 5);
    assert_non_null(strstr(w.items[0].message, "network.rules[1]: 127.0.0.1 is a loopback host"));
    assert_non_null(strstr(w.items[0].message, "host_loopback: true"));
    assert_non_null(strstr(w.items[1].message, "network.rules[4]: 0.0.0.0"));
    assert_non_null(strstr(w.items[2].message, "network.rules[5]: app.localhost"));
    pdk_policy_diags_free(&w);
    pdk_policy_free(p);

    char *d = parse_fail("version: 1\n"
                         "network:\n"
                         "  rules:\n"
                         "    - {host: \"*.localhost\", decision: allow, host_loopback: true}\n"
                         "    - {host: 127.0.0.1, decision: allow, host_loopback: yes-please}\n");
    assert_non_null(strstr(d, "policy.yaml:4:61: network.rules[0].host_loopback: a rule that "
                              "reaches the host's loopback names its host exactly"));
    assert_non_null(strstr(d, "network.rules[1].host_loopback: expected true or false"));
    free(d);
}

static void test_lookups(void **state)
{
    pdk_policy *p = parse_ok(issue_policy);
    pdk_net_rules *n = &p->network;
    assert_true(pdk_net_rules_could_reach(n, "open.feishu.cn"));
    assert_true(pdk_net_rules_could_reach(n, "registry.npmjs.org"));
    assert_false(pdk_net_rules_could_reach(n, "npmjs.org"));
    assert_false(pdk_net_rules_could_reach(n, "exfil-0123456789abcdef.attacker.example"));
    assert_true(pdk_net_rules_names_exactly(n, "git.internal.example"));
    assert_false(pdk_net_rules_names_exactly(n, "registry.npmjs.org")); /* only by a glob */
    assert_true(pdk_net_rules_is_passthrough(n, "registry.example.org"));
    assert_false(pdk_net_rules_is_passthrough(n, "open.feishu.cn"));
    const pdk_net_resolve *r = pdk_net_rules_resolve(n, "open.feishu.cn", 443);
    assert_non_null(r);
    assert_string_equal(r->to_host, "127.0.0.1");
    assert_int_equal(r->to_port, 18443);
    assert_null(pdk_net_rules_resolve(n, "open.feishu.cn", 80));
    size_t count = 0;
    uint16_t *ports = pdk_net_rules_ports(n, &count);
    assert_int_equal(count, 3);
    assert_int_equal(ports[0], 80);
    assert_int_equal(ports[1], 443);
    assert_int_equal(ports[2], 8443);
    free(ports);
    assert_string_equal(n->upstream_ca[0], "/etc/test-ca.pem");
    assert_null(n->upstream_ca[1]);
    pdk_policy_free(p);

    /* A deny-only rule makes nothing reachable; no section: no gateway. */
    p = parse_ok("version: 1\nnetwork:\n  rules:\n    - {host: x.example, decision: deny}\n");
    assert_false(pdk_net_rules_could_reach(&p->network, "x.example"));
    assert_false(pdk_net_rules_names_exactly(&p->network, "x.example"));
    pdk_policy_free(p);
    p = parse_ok("version: 1\n");
    assert_false(p->network.enabled);
    assert_int_equal(p->network.default_decision, PDK_DECISION_DENY);
    pdk_policy_free(p);
}

static void test_diagnostics(void **state)
{
    char *d = parse_fail("version: 1\n"
                         "network:\n"
                         "  default: confine\n"
                         "  rules:\n"
                         "    - {host: \"open.*.cn\", decision: allow}\n"
                         "    - {hosts: x, decision: allow}\n"
                         "    - {host: a.b, port: 0, scheme: ftp, methods: [G/T], path: x, "
                         "decision: confine}\n"
                         "    - {host: a.b, path: \"/x?y=1\", decision: allow}\n"
                         "  resolve: {\"a\": \"b:1\", \"c:1\": \"d\"}\n"
                         "  passthrough: [\"*.\"]\n"
                         "  bogus: 1\n");
    const char *want[] = {
        "policy.yaml:3:12: network.default: confine is a decision for commands",
        "policy.yaml:5:14: network.rules[0].host: \"open.*.cn\" is not a host",
        "policy.yaml:6:7: network.rules[1]: a rule needs \"host\"",
        "unknown key \"hosts\" in \"network.rules[1]\" (did you mean \"host\"?)",
        "network.rules[2].port: \"0\" is not a port",
        "network.rules[2].scheme: \"ftp\" is not a scheme",
        "network.rules[2].methods: \"G/T\" is not an HTTP method",
        "network.rules[2].path: \"x\" does not start with \"/\"",
        "network.rules[2].decision: confine is a decision for commands",
        "network.rules[3].path: \"/x?y=1\" has a query",
        "network.resolve: \"a\" is not host:port",
        "network.resolve.c:1: \"d\" is not host:port",
        "network.passthrough[0]: \"*.\" is not a host",
        "unknown key \"bogus\" in \"network\"",
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(*want); i++)
        if (!strstr(d, want[i]))
            fail_msg("missing diagnostic \"%s\" in:\n%s", want[i], d);
    free(d);
}

static void test_passthrough_rules(void **state)
{
    char *d = parse_fail("version: 1\n"
                         "network:\n"
                         "  rules:\n"
                         "    - {host: a.test, decision: allow}\n"
                         "    - {host: a.test, methods: [GET], decision: allow}\n"
                         "  passthrough: [a.test]\n");
    assert_non_null(strstr(d, "policy.yaml:5: network.rules[1]: a.test is a passthrough host"));
    assert_null(strstr(d, "network.rules[0]"));
    free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_requests),
        cmocka_unit_test(test_strictest_wins),
        cmocka_unit_test(test_connection_level),
        cmocka_unit_test(test_hosts),
        cmocka_unit_test(test_paths),
        cmocka_unit_test(test_path_normalize),
        cmocka_unit_test(test_path_parameters),
        cmocka_unit_test(test_host_loopback),
        cmocka_unit_test(test_lookups),
        cmocka_unit_test(test_diagnostics),
        cmocka_unit_test(test_passthrough_rules),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
