/* test_token_answer.c: token endpoints' answers (Feishu's tenant token, OAuth 2's refresh
 * grant) and the token cache entry (token_answer.c). */
#include "token_answer.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static int parse(pdk_token_kind kind, long status, const char *body, pdk_token_answer *a,
                 pdk_error *err)
{
    return pdk_token_answer_parse(kind, status, body, strlen(body), "c", "c_refresh", a, err);
}

static void test_feishu(void **state)
{
    pdk_token_answer a;
    pdk_error err = {0};
    assert_int_equal(parse(PDK_TOKEN_FEISHU_TENANT, 200,
                           "{\"code\":0,\"msg\":\"ok\",\"tenant_access_token\":\"t-abc\","
                           "\"expire\":7200}",
                           &a, &err),
                     0);
    assert_string_equal(a.token, "t-abc");
    assert_int_equal(a.lifetime_s, 7200);
    assert_null(a.refresh_token);
    pdk_token_answer_clear(&a);
    assert_null(a.token);
    /* a refusal: the code and message, with the status */
    assert_int_equal(parse(PDK_TOKEN_FEISHU_TENANT, 200,
                           "{\"code\":99991543,\"msg\":\"app_id or app_secret is invalid\"}", &a,
                           &err),
                     -1);
    assert_string_equal(err.message, "credential c: the token endpoint refused (HTTP 200): code "
                                     "99991543: app_id or app_secret is invalid");
    /* no code at all is no success either */
    assert_int_equal(parse(PDK_TOKEN_FEISHU_TENANT, 200,
                           "{\"tenant_access_token\":\"t-abc\",\"expire\":7200}", &a, &err),
                     -1);
    /* a token that could not go into a header, a lifetime that is no lifetime */
    assert_int_equal(parse(PDK_TOKEN_FEISHU_TENANT, 200,
                           "{\"code\":0,\"tenant_access_token\":\"t-a\\r\\nX: y\",\"expire\":7200}",
                           &a, &err),
                     -1);
    assert_non_null(strstr(err.message, "no usable token or expiry"));
    assert_int_equal(parse(PDK_TOKEN_FEISHU_TENANT, 200,
                           "{\"code\":0,\"tenant_access_token\":\"t-a\",\"expire\":\"7200\"}", &a,
                           &err),
                     -1);
    assert_int_equal(parse(PDK_TOKEN_FEISHU_TENANT, 200,
                           "{\"code\":0,\"tenant_access_token\":\"t-a\",\"expire\":0}", &a, &err),
                     -1);
    /* not JSON, not an object, a duplicated key */
    assert_int_equal(parse(PDK_TOKEN_FEISHU_TENANT, 502, "<html>bad gateway</html>", &a, &err), -1);
    assert_string_equal(err.message, "credential c: the token endpoint answered HTTP 502 with "
                                     "something else than JSON");
    assert_int_equal(parse(PDK_TOKEN_FEISHU_TENANT, 200, "[1]", &a, &err), -1);
    assert_int_equal(parse(PDK_TOKEN_FEISHU_TENANT, 200,
                           "{\"code\":0,\"tenant_access_token\":\"t-a\",\"tenant_access_token\":"
                           "\"t-b\",\"expire\":1}",
                           &a, &err),
                     -1);
}

static void test_oauth2(void **state)
{
    pdk_token_answer a;
    pdk_error err = {0};
    assert_int_equal(parse(PDK_TOKEN_OAUTH2, 200,
                           "{\"code\":0,\"access_token\":\"u-abc\",\"expires_in\":600,"
                           "\"refresh_token\":\"ur-next\",\"token_type\":\"Bearer\"}",
                           &a, &err),
                     0);
    assert_string_equal(a.token, "u-abc");
    assert_int_equal(a.lifetime_s, 600);
    assert_string_equal(a.refresh_token, "ur-next");
    pdk_token_answer_clear(&a);
    /* RFC 6749 only: no code; no expires_in (an hour), no new refresh token */
    assert_int_equal(parse(PDK_TOKEN_OAUTH2, 200, "{\"access_token\":\"abc\"}", &a, &err), 0);
    assert_int_equal(a.lifetime_s, PDK_TOKEN_DEFAULT_LIFETIME_S);
    assert_null(a.refresh_token);
    pdk_token_answer_clear(&a);
    /* refusals: RFC 6749's error, Feishu's code, a status alone */
    assert_int_equal(parse(PDK_TOKEN_OAUTH2, 400,
                           "{\"code\":20064,\"error\":\"invalid_grant\",\"error_description\":"
                           "\"The refresh token has been revoked.\"}",
                           &a, &err),
                     -1);
    assert_string_equal(err.message,
                        "credential c: the token endpoint refused the refresh token (HTTP 400, "
                        "invalid_grant, code 20064): The refresh token has been revoked. (store a "
                        "new one: paddock secret set c_refresh)");
    /* what the endpoint says goes into one line: no control character gets through */
    assert_int_equal(
        parse(PDK_TOKEN_OAUTH2, 400,
              "{\"error\":\"bad\\ngrant\",\"error_description\":\"line\\none\\u001b[2J\"}", &a,
              &err),
        -1);
    assert_non_null(strstr(err.message, "(HTTP 400, bad?grant): line?one?[2J (store"));
    assert_null(strchr(err.message, '\n'));
    assert_int_equal(parse(PDK_TOKEN_OAUTH2, 400, "{\"error\":\"invalid_grant\"}", &a, &err), -1);
    assert_string_equal(err.message,
                        "credential c: the token endpoint refused the refresh token (HTTP 400, "
                        "invalid_grant): no reason (store a new one: paddock secret set "
                        "c_refresh)");
    assert_int_equal(parse(PDK_TOKEN_OAUTH2, 500, "{\"access_token\":\"abc\"}", &a, &err), -1);
    assert_null(a.token);
    assert_int_equal(
        parse(PDK_TOKEN_OAUTH2, 200, "{\"code\":1,\"access_token\":\"abc\"}", &a, &err), -1);
    /* what cannot be used */
    assert_int_equal(parse(PDK_TOKEN_OAUTH2, 200, "{\"access_token\":\"a b\"}", &a, &err), -1);
    assert_int_equal(
        parse(PDK_TOKEN_OAUTH2, 200, "{\"access_token\":\"ab\",\"expires_in\":-5}", &a, &err), -1);
    assert_int_equal(
        parse(PDK_TOKEN_OAUTH2, 200, "{\"access_token\":\"ab\",\"refresh_token\":7}", &a, &err),
        -1);
    assert_non_null(strstr(err.message, "no usable access_token, expires_in or refresh_token"));
    assert_int_equal(
        parse(PDK_TOKEN_OAUTH2, 200, "{\"access_token\":\"ab\",\"refresh_token\":null}", &a, &err),
        0);
    assert_null(a.refresh_token);
    pdk_token_answer_clear(&a);
}

static void test_cache_entry(void **state)
{
    char *entry = pdk_token_cache_format("t-abc", 1796137391424596624LL, 7200000000000LL);
    assert_string_equal(entry, "t-abc 1796137391424596624 7200000000000");
    char *token = NULL;
    int64_t e = 0, l = 0;
    assert_true(pdk_token_cache_parse(entry, &token, &e, &l));
    assert_string_equal(token, "t-abc");
    assert_int_equal(e, 1796137391424596624LL);
    assert_int_equal(l, 7200000000000LL);
    free(token);
    free(entry);
    static const char *bad[] = {
        "",          "t-abc",      " 1 2",       "t-abc 1",    "t-abc x 2",
        "t-abc 1 0", "t-abc 1 2 ", "t-abc -1 2", "t-abc 1 -2", "t-abc 1 99999999999999999999"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_false(pdk_token_cache_parse(bad[i], &token, &e, &l));
        assert_null(token);
    }
    assert_false(pdk_token_cache_parse(NULL, &token, &e, &l));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_feishu),
        cmocka_unit_test(test_oauth2),
        cmocka_unit_test(test_cache_entry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
