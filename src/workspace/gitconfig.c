/* gitconfig.c: see gitconfig.h. Follows git_parse_source() and parse_value() of git's
 * config.c. */
#include "gitconfig.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

typedef struct reader {
    const char *text;
    size_t len, pos;
} reader;

/* The next character, "\r\n" read as "\n"; -1 at the end. */
static int next_char(reader *r)
{
    if (r->pos >= r->len)
        return -1;
    int c = (unsigned char)r->text[r->pos++];
    if (c == '\r' && r->pos < r->len && r->text[r->pos] == '\n') {
        r->pos++;
        c = '\n';
    }
    return c;
}

static void skip_line(reader *r)
{
    int c;
    do
        c = next_char(r);
    while (c != '\n' && c != -1);
}

static bool is_key_char(int c)
{
    return isalnum(c) || c == '-';
}

/* After '[': the section's name (lower case) into name; *subsection when it has one.
 * 0, or -1 when the header is malformed. */
static int read_header(reader *r, pdk_buf *name, bool *subsection)
{
    *subsection = false;
    for (;;) {
        int c = next_char(r);
        if (c == -1 || c == '\n')
            return -1;
        if (c == ']')
            return 0;
        if (isspace(c)) {
            /* [section "subsection"] */
            do
                c = next_char(r);
            while (c == ' ' || c == '\t');
            if (c != '"')
                return -1;
            for (;;) {
                c = next_char(r);
                if (c == -1 || c == '\n')
                    return -1;
                if (c == '"')
                    break;
                if (c == '\\') {
                    c = next_char(r);
                    if (c == -1 || c == '\n')
                        return -1;
                }
            }
            *subsection = true;
            return next_char(r) == ']' ? 0 : -1;
        }
        if (c == '.') {
            *subsection = true; /* the old [section.subsection] */
            continue;
        }
        if (!is_key_char(c))
            return -1;
        if (!*subsection) {
            char lower = (char)tolower(c);
            pdk_buf_append(name, &lower, 1);
        }
    }
}

/* After '=': the value, to the end of its line. 0, or -1 when malformed. */
static int read_value(reader *r, pdk_buf *value)
{
    bool quote = false, comment = false;
    size_t spaces = 0;
    pdk_buf_append(value, "", 0);
    for (;;) {
        int c = next_char(r);
        if (c == '\n' || c == -1)
            return quote ? -1 : 0;
        if (comment)
            continue;
        if (isspace(c) && !quote) {
            if (value->len)
                spaces++;
            continue;
        }
        if (!quote && (c == ';' || c == '#')) {
            comment = true;
            continue;
        }
        for (; spaces; spaces--)
            pdk_buf_append(value, " ", 1);
        if (c == '\\') {
            c = next_char(r);
            switch (c) {
            case '\n':
                continue;
            case 't':
                c = '\t';
                break;
            case 'b':
                c = '\b';
                break;
            case 'n':
                c = '\n';
                break;
            case '\\':
            case '"':
                break;
            default:
                return -1;
            }
        } else if (c == '"') {
            quote = !quote;
            continue;
        }
        char ch = (char)c;
        pdk_buf_append(value, &ch, 1);
    }
}

int pdk_git_config_get(const char *text, size_t len, const char *section, const char *key,
                       char **value)
{
    *value = NULL;
    reader r = {text, len, 0};
    pdk_buf name = {0};
    bool wanted_section = false;
    char *found = NULL;
    int ret = -1;
    for (;;) {
        int c = next_char(&r);
        if (c == -1)
            break;
        if (c == '\n' || isspace(c))
            continue;
        if (c == '#' || c == ';') {
            skip_line(&r);
            continue;
        }
        if (c == '[') {
            bool subsection;
            pdk_buf_free(&name);
            if (read_header(&r, &name, &subsection) < 0)
                goto out;
            wanted_section = !subsection && name.data && strcasecmp(name.data, section) == 0;
            continue;
        }
        if (!isalpha(c))
            goto out;
        pdk_buf k = {0};
        for (; is_key_char(c); c = next_char(&r)) {
            char lower = (char)tolower(c);
            pdk_buf_append(&k, &lower, 1);
        }
        while (c == ' ' || c == '\t')
            c = next_char(&r);
        bool match = wanted_section && strcasecmp(k.data, key) == 0;
        pdk_buf_free(&k);
        if (c == '\n' || c == -1 || c == '#' || c == ';') {
            /* a boolean: no string */
            if (c == '#' || c == ';')
                skip_line(&r);
            if (match) {
                free(found);
                found = NULL;
            }
            continue;
        }
        if (c != '=')
            goto out;
        pdk_buf v = {0};
        if (read_value(&r, &v) < 0) {
            pdk_buf_free(&v);
            goto out;
        }
        if (match) {
            free(found);
            found = pdk_buf_steal(&v);
        } else {
            pdk_buf_free(&v);
        }
    }
    ret = found ? 1 : 0;
    *value = steal_pointer(&found);
out:
    free(found);
    pdk_buf_free(&name);
    return ret;
}
