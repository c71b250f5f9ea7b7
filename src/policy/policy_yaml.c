/* policy_yaml.c: the policy's YAML as libyaml reads it, and the diagnostics.
 *
 * The text goes through libyaml twice (pdk__yaml_load):
 *   1. as events (prescan): anchors, aliases, explicit tags, a second document and absurd
 *      nesting are refused here, before anything builds a graph from them (an alias can
 *      turn the tree into a cycle or an exponential walk);
 *   2. as a document (yaml_parser_load), walked by the sections' key tables. Every node
 *      keeps its start mark, so each problem becomes a diagnostic FILE:LINE:COLUMN.
 * Also here: the diagnostics themselves (one line each, at a node's position), values quoted
 * for messages, and the helpers that read a node as what a key expects ("expected a list,
 * got ...").
 */
#include "policy_internal.h"
#include "output.h"

#include "display.h"

#include <limits.h>
#include <string.h>
#include <unistd.h>

#define MAX_DEPTH       32
#define MAX_SHOWN_CHARS 64 /* of a value quoted in a message */

/* ---- diagnostics ---- */

static int clamp_int(size_t v)
{
    return v > INT_MAX ? INT_MAX : (int)v;
}

static void diag_v(parse_state *st, size_t line, size_t column, const char *fmt, va_list ap)
    PDK_PRINTF(4, 0);
static void diag_v(parse_state *st, size_t line, size_t column, const char *fmt, va_list ap)
{
    if (st->ndiags >= MAX_DIAGS) {
        st->truncated = true;
        return;
    }
    if (st->ndiags % 16 == 0)
        st->diags = xrealloc(st->diags, (st->ndiags + 16) * sizeof(*st->diags));
    pdk_policy_diag *d = &st->diags[st->ndiags++];
    d->file = xstrdup(st->name);
    d->line = clamp_int(line);
    d->column = clamp_int(column);
    d->message = xvasprintf(fmt, ap);
}

void pdk__diag_at(parse_state *st, size_t line, size_t column, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_v(st, line, column, fmt, ap);
    va_end(ap);
}

void pdk__diag_mark(parse_state *st, const yaml_mark_t *mark, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    diag_v(st, mark->line + 1, mark->column + 1, fmt, ap);
    va_end(ap);
}

int pdk__node_line(const yaml_node_t *n)
{
    return clamp_int(n->start_mark.line + 1);
}

/* Insertion sort: at most MAX_DIAGS items. */
void pdk__diag_sort(pdk_policy_diag *d, size_t n)
{
    for (size_t i = 1; i < n; i++) {
        pdk_policy_diag cur = d[i];
        size_t j = i;
        while (j > 0 && (d[j - 1].line > cur.line ||
                         (d[j - 1].line == cur.line && d[j - 1].column > cur.column))) {
            d[j] = d[j - 1];
            j--;
        }
        d[j] = cur;
    }
}

/* s quoted for a one-line message: "...", escaped as display.h says (quotes too), and long
 * values cut (between characters) with "...". */
char *pdk__quote(const char *s, size_t len)
{
    size_t shown = pdk_display_cut(s, len, MAX_SHOWN_CHARS);
    pdk_buf b = {0};
    pdk_buf_puts(&b, "\"");
    pdk_display_escape(&b, s, shown, PDK_DISPLAY_QUOTE);
    if (shown < len)
        pdk_buf_puts(&b, "...");
    pdk_buf_puts(&b, "\"");
    return pdk_buf_steal(&b);
}

char *pdk__quote_str(const char *s)
{
    return pdk__quote(s, strlen(s));
}

/* ---- nodes ---- */

bool pdk__node_is_null(const yaml_node_t *n)
{
    if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
        return false;
    const char *v = (const char *)n->data.scalar.value;
    return n->data.scalar.length == 0 || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 ||
           strcmp(v, "Null") == 0 || strcmp(v, "NULL") == 0;
}

bool pdk__plain_is(const yaml_node_t *n, const char *text)
{
    return strcmp((const char *)n->data.scalar.value, text) == 0;
}

/* What a node is, for "expected X, got Y" (new string). */
char *pdk__node_describe(const yaml_node_t *n)
{
    switch (n->type) {
    case YAML_MAPPING_NODE:
        return xstrdup("a mapping");
    case YAML_SEQUENCE_NODE:
        return xstrdup("a list");
    case YAML_SCALAR_NODE:
        if (pdk__node_is_null(n))
            return xstrdup("nothing");
        return pdk__quote((const char *)n->data.scalar.value, n->data.scalar.length);
    case YAML_NO_NODE:
    default:
        return xstrdup("nothing");
    }
}

yaml_node_t *pdk__node_at(parse_state *st, int index)
{
    return yaml_document_get_node(st->doc, index);
}

void pdk__expected(parse_state *st, const char *field, yaml_node_t *n, const char *what)
{
    _cleanup_free_ char *got = pdk__node_describe(n);
    const char *hint = "";
    if (pdk__node_is_null(n)) {
        if (strcmp(what, "a list") == 0)
            hint = " (use [] for an empty list)";
        else if (strcmp(what, "a mapping") == 0)
            hint = " (add entries under it, or remove the key)";
    }
    pdk__diag_node(st, n, "%s: expected %s, got %s%s", field, what, got, hint);
}

bool pdk__expect_type(parse_state *st, const char *field, yaml_node_t *n, yaml_node_type_t type)
{
    if (n->type == type && !pdk__node_is_null(n))
        return true;
    const char *what = type == YAML_MAPPING_NODE    ? "a mapping"
                       : type == YAML_SEQUENCE_NODE ? "a list"
                                                    : "a value";
    pdk__expected(st, field, n, what);
    return false;
}

/* The text of a scalar node (NUL-terminated by libyaml), or NULL after a diagnostic when n
 * is not a non-null scalar or contains a NUL character. what names the expected thing. */
const char *pdk__scalar_text(parse_state *st, const char *field, yaml_node_t *n, const char *what)
{
    if (n->type != YAML_SCALAR_NODE || pdk__node_is_null(n)) {
        pdk__expected(st, field, n, what);
        return NULL;
    }
    const char *v = (const char *)n->data.scalar.value;
    if (memchr(v, '\0', n->data.scalar.length)) {
        _cleanup_free_ char *q = pdk__quote(v, n->data.scalar.length);
        pdk__diag_node(st, n, "%s: %s contains a NUL character", field, q);
        return NULL;
    }
    return v;
}
/* The items of a list node; false (after a diagnostic) when n is not a list. */
bool pdk__list_items(parse_state *st, const char *field, yaml_node_t *n, yaml_node_item_t **items,
                     size_t *count)
{
    *items = NULL;
    *count = 0;
    if (n->type != YAML_SEQUENCE_NODE) {
        pdk__expected(st, field, n, "a list");
        return false;
    }
    *items = n->data.sequence.items.start;
    *count = (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
    return true;
}

/* fn on each item of a list node (field "FIELD[i]"); a diagnostic when n is not a list. */
void pdk__each_item(parse_state *st, const char *field, yaml_node_t *n,
                    void (*fn)(parse_state *st, const char *field, yaml_node_t *item))
{
    yaml_node_item_t *items;
    size_t count;
    if (!pdk__list_items(st, field, n, &items, &count))
        return;
    for (size_t i = 0; i < count; i++) {
        yaml_node_t *item = pdk__node_at(st, items[i]);
        _cleanup_free_ char *f = xasprintf("%s[%zu]", field, i);
        if (item)
            fn(st, f, item);
    }
}

/* ---- libyaml ---- */

static PDK_NORETURN void yaml_out_of_memory(void)
{
    pdk_output_out_of_memory("libyaml");
}

static void syntax_diag(parse_state *st, const yaml_parser_t *parser)
{
    const char *problem = parser->problem ? parser->problem : "invalid YAML";
    switch (parser->error) {
    case YAML_MEMORY_ERROR:
        yaml_out_of_memory();
    case YAML_READER_ERROR: {
        /* The reader reports a byte offset, not a mark. */
        size_t line = 1, column = 1;
        for (size_t i = 0; i < parser->problem_offset && i < st->len; i++) {
            if (st->text[i] == '\n') {
                line++;
                column = 1;
            } else {
                column++;
            }
        }
        if (parser->problem_value >= 0)
            pdk__diag_at(st, line, column, "not valid UTF-8 text: %s (byte 0x%02x)", problem,
                         (unsigned)parser->problem_value & 0xffu);
        else
            pdk__diag_at(st, line, column, "not valid UTF-8 text: %s", problem);
        return;
    }
    case YAML_SCANNER_ERROR:
    case YAML_PARSER_ERROR:
    case YAML_COMPOSER_ERROR:
        if (parser->context)
            pdk__diag_mark(st, &parser->problem_mark,
                           "YAML syntax error: %s, %s that starts at line %zu, column %zu", problem,
                           parser->context, parser->context_mark.line + 1,
                           parser->context_mark.column + 1);
        else
            pdk__diag_mark(st, &parser->problem_mark, "YAML syntax error: %s", problem);
        return;
    case YAML_NO_ERROR:
    case YAML_WRITER_ERROR:
    case YAML_EMITTER_ERROR:
    default:
        pdk__diag_at(st, 0, 0, "YAML error: %s", problem);
        return;
    }
}

static void parser_init(parse_state *st, yaml_parser_t *parser)
{
    if (!yaml_parser_initialize(parser))
        yaml_out_of_memory();
    /* The encoding is detected (UTF-8 with or without a BOM, or UTF-16 with one). */
    yaml_parser_set_input_string(parser, (const unsigned char *)st->text, st->len);
}

static void refuse_anchor_tag(parse_state *st, const yaml_event_t *ev, const yaml_char_t *anchor,
                              const yaml_char_t *tag)
{
    if (anchor)
        pdk__diag_mark(st, &ev->start_mark,
                       "anchors and aliases are not allowed in a policy (write the value out)");
    if (tag) {
        /* libyaml expands "!!str" to the full tag; show it the way it was written. */
        static const char core[] = "tag:yaml.org,2002:";
        const char *t = (const char *)tag;
        _cleanup_free_ char *shown =
            pdk_str_has_prefix(t, core) ? xasprintf("!!%s", t + strlen(core)) : xstrdup(t);
        _cleanup_free_ char *q = pdk__quote_str(shown);
        pdk__diag_mark(st, &ev->start_mark, "tags (%s) are not allowed in a policy (remove it)", q);
    }
}

/* The event pass. Returns true when the first document is safe to load and walk. */
static bool prescan(parse_state *st)
{
    yaml_parser_t parser;
    parser_init(st, &parser);
    bool ok = true, done = false;
    int depth = 0, documents = 0;
    while (!done) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            syntax_diag(st, &parser);
            ok = false;
            break;
        }
        switch (ev.type) {
        case YAML_STREAM_END_EVENT:
            done = true;
            break;
        case YAML_DOCUMENT_START_EVENT:
            if (++documents > 1) {
                /* The first document was scanned completely: it can still be walked. */
                pdk__diag_mark(st, &ev.start_mark,
                               "a policy is a single YAML document (remove this \"---\" and what "
                               "follows)");
                done = true;
            }
            break;
        case YAML_ALIAS_EVENT:
            pdk__diag_mark(st, &ev.start_mark,
                           "anchors and aliases are not allowed in a policy (write the value out)");
            ok = false;
            break;
        case YAML_SCALAR_EVENT:
            refuse_anchor_tag(st, &ev, ev.data.scalar.anchor, ev.data.scalar.tag);
            break;
        case YAML_SEQUENCE_START_EVENT:
        case YAML_MAPPING_START_EVENT:
            if (ev.type == YAML_SEQUENCE_START_EVENT)
                refuse_anchor_tag(st, &ev, ev.data.sequence_start.anchor,
                                  ev.data.sequence_start.tag);
            else
                refuse_anchor_tag(st, &ev, ev.data.mapping_start.anchor, ev.data.mapping_start.tag);
            if (++depth > MAX_DEPTH) {
                pdk__diag_mark(st, &ev.start_mark,
                               "nested more than %d levels deep (a policy is at most 3)",
                               MAX_DEPTH);
                ok = false;
                done = true;
            }
            break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT:
            depth--;
            break;
        case YAML_NO_EVENT:
        case YAML_STREAM_START_EVENT:
        case YAML_DOCUMENT_END_EVENT:
        default:
            break;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    return ok;
}

bool pdk__yaml_load(parse_state *st, yaml_parser_t *parser, yaml_document_t *doc)
{
    if (!prescan(st))
        return false;
    parser_init(st, parser);
    if (!yaml_parser_load(parser, doc)) {
        syntax_diag(st, parser);
        yaml_parser_delete(parser);
        return false;
    }
    return true;
}
