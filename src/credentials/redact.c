/* redact.c: see redact.h. */
#include "redact.h"

#include "util.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct entry {
    char *text;
    char *label;      /* a real value's, or NULL */
    bool placeholder; /* a stand-in the sandbox holds: not masked toward it */
} entry;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static entry *entries;
static size_t count;
static uint64_t generation;

static void add(const char *secret, const char *label, bool placeholder)
{
    if (!secret || strlen(secret) < 4)
        return;
    pthread_mutex_lock(&lock);
    bool known = false;
    for (size_t i = 0; i < count && !known; i++)
        if (strcmp(entries[i].text, secret) == 0) {
            known = true;
            if (!placeholder && entries[i].placeholder) {
                entries[i].placeholder = false; /* (a value that is both is a value) */
                generation++;
            }
        }
    if (!known) {
        entries = xrealloc(entries, (count + 1) * sizeof(*entries));
        entries[count++] = (entry){xstrdup(secret), label ? xstrdup(label) : NULL, placeholder};
        if (!placeholder)
            generation++;
    }
    pthread_mutex_unlock(&lock);
}

void pdk_redact_add(const char *secret)
{
    add(secret, NULL, false);
}

void pdk_redact_add_named(const char *secret, const char *label)
{
    add(secret, label, false);
}

void pdk_redact_add_placeholder(const char *placeholder)
{
    add(placeholder, NULL, true);
}

void pdk_redact_clear(void)
{
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < count; i++) {
        pdk_free_secret(entries[i].text);
        free(entries[i].label);
    }
    free(entries);
    entries = NULL;
    count = 0;
    generation++;
    pthread_mutex_unlock(&lock);
}

static int longest_first(const void *a, const void *b)
{
    size_t la = strlen(entries[*(const size_t *)a].text);
    size_t lb = strlen(entries[*(const size_t *)b].text);
    return la < lb ? 1 : la > lb ? -1 : 0;
}

static char *replace_locked(const char *s, bool values_only)
{
    if (!s)
        return NULL;
    /* The entries in s, the longest first: a value that holds a shorter one is replaced
     * whole, not left with what surrounds the shorter one. */
    size_t *hits = NULL, nhits = 0;
    for (size_t i = 0; i < count; i++) {
        if ((values_only && entries[i].placeholder) || !strstr(s, entries[i].text))
            continue;
        hits = xrealloc(hits, (nhits + 1) * sizeof(*hits));
        hits[nhits++] = i;
    }
    if (nhits == 0)
        return NULL;
    qsort(hits, nhits, sizeof(*hits), longest_first);
    char *cur = xstrdup(s);
    for (size_t h = 0; h < nhits; h++) {
        pdk_buf b = {0};
        pdk_buf_replace_all(&b, cur, strlen(cur), entries[hits[h]].text, PDK_REDACTED);
        pdk_free_secret(cur);
        cur = pdk_buf_steal(&b);
    }
    free(hits);
    return cur;
}

char *pdk_redact_text(const char *s)
{
    pthread_mutex_lock(&lock);
    char *r = replace_locked(s, false);
    pthread_mutex_unlock(&lock);
    return r;
}

char *pdk_redacted(const char *s)
{
    char *r = pdk_redact_text(s);
    return r ? r : xstrdup(s ? s : "");
}

char *pdk_redact_values_text(const char *s)
{
    pthread_mutex_lock(&lock);
    char *r = replace_locked(s, true);
    pthread_mutex_unlock(&lock);
    return r ? r : xstrdup(s ? s : "");
}

uint64_t pdk_redact_generation(void)
{
    pthread_mutex_lock(&lock);
    uint64_t g = generation;
    pthread_mutex_unlock(&lock);
    return g;
}

void pdk_redact_values(void (*fn)(void *arg, const char *value, const char *label), void *arg)
{
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < count; i++)
        if (!entries[i].placeholder)
            fn(arg, entries[i].text, entries[i].label ? entries[i].label : "");
    pthread_mutex_unlock(&lock);
}
