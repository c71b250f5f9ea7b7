/* redact.c: see redact.h. */
#include "redact.h"

#include "util.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char **secrets;

void pdk_redact_add(const char *secret)
{
    if (!secret || strlen(secret) < 4)
        return;
    pthread_mutex_lock(&lock);
    if (!pdk_strv_contains(secrets, secret))
        pdk_strv_push(&secrets, secret);
    pthread_mutex_unlock(&lock);
}

void pdk_redact_clear(void)
{
    pthread_mutex_lock(&lock);
    pdk_strv_free(secrets);
    secrets = NULL;
    pthread_mutex_unlock(&lock);
}

static char *replace_locked(const char *s)
{
    if (!secrets || !s)
        return NULL;
    bool found = false;
    for (size_t i = 0; secrets[i] && !found; i++)
        found = strstr(s, secrets[i]) != NULL;
    if (!found)
        return NULL;
    char *cur = xstrdup(s);
    for (size_t i = 0; secrets[i]; i++) {
        pdk_buf b = {0};
        pdk_buf_replace_all(&b, cur, strlen(cur), secrets[i], PDK_REDACTED);
        free(cur);
        cur = pdk_buf_steal(&b);
    }
    return cur;
}

char *pdk_redact_text(const char *s)
{
    pthread_mutex_lock(&lock);
    char *r = replace_locked(s);
    pthread_mutex_unlock(&lock);
    return r;
}

char *pdk_redacted(const char *s)
{
    char *r = pdk_redact_text(s);
    return r ? r : xstrdup(s ? s : "");
}
