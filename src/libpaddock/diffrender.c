/* diffrender.c: see diffrender.h. */
#include "diffrender.h"

#include "fsutil.h"
#include "textdiff.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef enum section_type {
    SECTION_MODIFY = 0,
    SECTION_ADD = 1,
    SECTION_DELETE = 2,
} section_type;

/* One "diff --git" block. A type change of a file to a symlink has two (a deletion, then an
 * addition), as git writes it. */
typedef struct section {
    section_type type;
    unsigned old_mode, new_mode;
    bool content; /* the bytes differ */
    bool binary;
    bool too_large;
    int64_t old_bytes, new_bytes;
    pdk_textdiff_stats stats;
    pdk_buf hunks;
} section;

typedef struct file_diff {
    const pdk_change *change;
    section sections[2];
    size_t nsections;
    size_t insertions, deletions;
    bool binary, too_large;
} file_diff;

typedef struct side_content {
    char *data;
    size_t len;
    bool too_large;
} side_content;

static bool is_textual(pdk_change_kind kind)
{
    return kind == PDK_KIND_FILE || kind == PDK_KIND_SYMLINK;
}

static int load_side(int dirfd, const pdk_change *c, bool new_side, side_content *out,
                     pdk_error *err)
{
    memset(out, 0, sizeof(*out));
    pdk_change_kind kind = new_side ? c->new_kind : c->old_kind;
    if (kind == PDK_KIND_SYMLINK) {
        const char *t = new_side ? c->new_target : c->old_target;
        out->data = xstrdup(t ? t : "");
        out->len = strlen(out->data);
        return 0;
    }
    const char *where = new_side ? "the session's copy of" : "the real";
    _cleanup_close_ int fd = pdk_open_regular_beneath(dirfd, c->path);
    if (fd < 0 && errno == ENXIO)
        return pdk_error_set(err, 0, "%s \"%s\" is no longer a regular file; run the diff again",
                             where, c->path);
    if (fd < 0)
        return pdk_error_set(err, errno, "cannot open %s \"%s\"", where, c->path);
    struct stat st;
    if (fstat(fd, &st) < 0)
        return pdk_error_set(err, errno, "cannot stat %s \"%s\"", where, c->path);
    if (!S_ISREG(st.st_mode))
        return pdk_error_set(err, 0, "%s \"%s\" is no longer a regular file; run the diff again",
                             where, c->path);
    if ((uint64_t)st.st_size > PDK_TEXTDIFF_MAX_SIZE) {
        out->too_large = true;
        return 0;
    }
    if (pdk_read_all(fd, &out->data, &out->len, PDK_TEXTDIFF_MAX_SIZE) < 0) {
        if (errno == EFBIG) {
            out->too_large = true;
            return 0;
        }
        return pdk_error_set(err, errno, "cannot read %s \"%s\"", where, c->path);
    }
    return 0;
}

static int fill_section(section *s, const pdk_change *c, int lower_dirfd, int upper_dirfd,
                        unsigned context, bool want_hunks, pdk_error *err)
{
    side_content old_side = {0}, new_side = {0};
    int r = 0;
    if (s->type != SECTION_ADD) {
        r = load_side(lower_dirfd, c, false, &old_side, err);
        if (r < 0)
            goto out;
    }
    if (s->type != SECTION_DELETE) {
        r = load_side(upper_dirfd, c, true, &new_side, err);
        if (r < 0)
            goto out;
    }
    s->old_bytes = s->type == SECTION_ADD ? 0 : c->old_size;
    s->new_bytes = s->type == SECTION_DELETE ? 0 : c->new_size;
    if (s->type == SECTION_MODIFY && c->old_kind == PDK_KIND_SYMLINK)
        s->old_bytes = (int64_t)old_side.len;
    if (s->type != SECTION_DELETE && c->new_kind == PDK_KIND_SYMLINK)
        s->new_bytes = (int64_t)new_side.len;
    if (s->type == SECTION_DELETE && c->old_kind == PDK_KIND_SYMLINK)
        s->old_bytes = (int64_t)old_side.len;
    if (old_side.too_large || new_side.too_large) {
        s->binary = s->too_large = true;
        goto out;
    }
    if (pdk_textdiff_is_binary(old_side.data, old_side.len) ||
        pdk_textdiff_is_binary(new_side.data, new_side.len)) {
        s->binary = true;
        goto out;
    }
    pdk_textdiff_unified(old_side.data ? old_side.data : "", old_side.len,
                         new_side.data ? new_side.data : "", new_side.len, context,
                         want_hunks ? &s->hunks : NULL, &s->stats);
out:
    free(old_side.data);
    free(new_side.data);
    return r;
}

static void add_section(file_diff *fd, section_type type, const pdk_change *c)
{
    section *s = &fd->sections[fd->nsections++];
    memset(s, 0, sizeof(*s));
    s->type = type;
    s->old_mode = type == SECTION_ADD ? 0 : pdk_change_display_mode(c->old_kind, c->old_mode);
    s->new_mode = type == SECTION_DELETE ? 0 : pdk_change_display_mode(c->new_kind, c->new_mode);
    s->content = type != SECTION_MODIFY || c->content_changed;
}

static void free_diffs(file_diff *diffs, size_t n)
{
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < diffs[i].nsections; k++)
            pdk_buf_free(&diffs[i].sections[k].hunks);
    free(diffs);
}

static int compute(const pdk_change_list *changes, int lower_dirfd, int upper_dirfd,
                   const pdk_diffrender_options *opts, bool want_hunks, file_diff **out,
                   size_t *count, pdk_error *err)
{
    unsigned context =
        (opts && opts->context >= 0) ? (unsigned)opts->context : PDK_TEXTDIFF_DEFAULT_CONTEXT;
    char *const *paths = opts ? opts->paths : NULL;
    file_diff *diffs = xcalloc(changes->count + 1, sizeof(file_diff));
    size_t n = 0;
    for (size_t i = 0; i < changes->count; i++) {
        const pdk_change *c = &changes->items[i];
        if (!pdk_changes_path_selected(c->path, paths))
            continue;
        file_diff *fd = &diffs[n++];
        fd->change = c;
        switch (c->status) {
        case PDK_CHANGE_MODIFIED:
            if (is_textual(c->new_kind) && c->old_kind == c->new_kind)
                add_section(fd, SECTION_MODIFY, c);
            break;
        case PDK_CHANGE_ADDED:
            if (is_textual(c->new_kind))
                add_section(fd, SECTION_ADD, c);
            break;
        case PDK_CHANGE_DELETED:
            if (is_textual(c->old_kind))
                add_section(fd, SECTION_DELETE, c);
            break;
        case PDK_CHANGE_TYPE_CHANGED:
            if (is_textual(c->old_kind))
                add_section(fd, SECTION_DELETE, c);
            if (is_textual(c->new_kind))
                add_section(fd, SECTION_ADD, c);
            break;
        default:
            break;
        }
        for (size_t k = 0; k < fd->nsections; k++) {
            section *s = &fd->sections[k];
            if (s->content &&
                fill_section(s, c, lower_dirfd, upper_dirfd, context, want_hunks, err) < 0) {
                free_diffs(diffs, n);
                return -1;
            }
            fd->insertions += s->stats.insertions;
            fd->deletions += s->stats.deletions;
            fd->binary |= s->binary;
            fd->too_large |= s->too_large;
        }
    }
    *out = diffs;
    *count = n;
    return 0;
}

static bool needs_quote(const char *path)
{
    for (const unsigned char *p = (const unsigned char *)path; *p; p++)
        if (*p < 0x20 || *p == '"' || *p == '\\' || *p >= 0x7f)
            return true;
    return false;
}

void pdk_diffrender_quote_path(pdk_buf *out, const char *prefix, const char *path)
{
    if (!needs_quote(path)) {
        pdk_buf_puts(out, prefix);
        pdk_buf_puts(out, path);
        return;
    }
    pdk_buf_puts(out, "\"");
    pdk_buf_puts(out, prefix);
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        switch (*p) {
        case '\a':
            pdk_buf_puts(out, "\\a");
            break;
        case '\b':
            pdk_buf_puts(out, "\\b");
            break;
        case '\t':
            pdk_buf_puts(out, "\\t");
            break;
        case '\n':
            pdk_buf_puts(out, "\\n");
            break;
        case '\v':
            pdk_buf_puts(out, "\\v");
            break;
        case '\f':
            pdk_buf_puts(out, "\\f");
            break;
        case '\r':
            pdk_buf_puts(out, "\\r");
            break;
        case '"':
            pdk_buf_puts(out, "\\\"");
            break;
        case '\\':
            pdk_buf_puts(out, "\\\\");
            break;
        default:
            if (*p < 0x20 || *p >= 0x7f)
                pdk_buf_printf(out, "\\%03o", *p);
            else
                pdk_buf_append(out, p, 1);
        }
    }
    pdk_buf_puts(out, "\"");
}

/* "--- a/P" or "+++ b/P"; git ends the line with a tab when the name holds a space. */
static void put_file_line(pdk_buf *out, const char *marker, const char *prefix, const char *path)
{
    pdk_buf_puts(out, marker);
    if (!path) {
        pdk_buf_puts(out, "/dev/null\n");
        return;
    }
    pdk_diffrender_quote_path(out, prefix, path);
    pdk_buf_puts(out, strchr(path, ' ') ? "\t\n" : "\n");
}

static void put_binary_line(pdk_buf *out, const char *old_path, const char *new_path)
{
    pdk_buf_puts(out, "Binary files ");
    if (old_path)
        pdk_diffrender_quote_path(out, "a/", old_path);
    else
        pdk_buf_puts(out, "/dev/null");
    pdk_buf_puts(out, " and ");
    if (new_path)
        pdk_diffrender_quote_path(out, "b/", new_path);
    else
        pdk_buf_puts(out, "/dev/null");
    pdk_buf_puts(out, " differ\n");
}

static void put_section(pdk_buf *out, const char *path, const section *s)
{
    bool mode_changed = s->type == SECTION_MODIFY && s->old_mode != s->new_mode;
    if (s->type == SECTION_MODIFY && !mode_changed && !s->content)
        return;
    pdk_buf_puts(out, "diff --git ");
    pdk_diffrender_quote_path(out, "a/", path);
    pdk_buf_puts(out, " ");
    pdk_diffrender_quote_path(out, "b/", path);
    pdk_buf_puts(out, "\n");
    switch (s->type) {
    case SECTION_ADD:
        pdk_buf_printf(out, "new file mode %06o\n", s->new_mode);
        break;
    case SECTION_DELETE:
        pdk_buf_printf(out, "deleted file mode %06o\n", s->old_mode);
        break;
    case SECTION_MODIFY:
    default:
        if (mode_changed)
            pdk_buf_printf(out, "old mode %06o\nnew mode %06o\n", s->old_mode, s->new_mode);
        break;
    }
    if (!s->content)
        return;
    const char *old_path = s->type == SECTION_ADD ? NULL : path;
    const char *new_path = s->type == SECTION_DELETE ? NULL : path;
    if (s->binary) {
        put_binary_line(out, old_path, new_path);
        return;
    }
    if (s->hunks.len == 0)
        return;
    put_file_line(out, "--- ", "a/", old_path);
    put_file_line(out, "+++ ", "b/", new_path);
    pdk_buf_append(out, s->hunks.data, s->hunks.len);
}

int pdk_diffrender_patch(const pdk_change_list *changes, int lower_dirfd, int upper_dirfd,
                         const pdk_diffrender_options *opts, pdk_buf *out, pdk_error *err)
{
    file_diff *diffs = NULL;
    size_t n = 0;
    if (compute(changes, lower_dirfd, upper_dirfd, opts, true, &diffs, &n, err) < 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        for (size_t k = 0; k < diffs[i].nsections; k++)
            put_section(out, diffs[i].change->path, &diffs[i].sections[k]);
    free_diffs(diffs, n);
    return 0;
}

static int decimal_width(uintmax_t v)
{
    int w = 1;
    while (v >= 10) {
        v /= 10;
        w++;
    }
    return w;
}

/* git's scale_linear: at least one column for any change. */
static size_t scale_linear(size_t it, size_t width, size_t max_change)
{
    if (!it)
        return 0;
    return 1 + (it * (width - 1) / max_change);
}

static bool dir_only(const file_diff *d)
{
    const pdk_change *c = d->change;
    return d->nsections == 0 && (c->new_kind == PDK_KIND_DIR ||
                                 (c->status == PDK_CHANGE_DELETED && c->old_kind == PDK_KIND_DIR));
}

static void put_repeat(pdk_buf *out, char ch, size_t n)
{
    for (size_t i = 0; i < n; i++)
        pdk_buf_append(out, &ch, 1);
}

/* Follows show_stats() of git's diff.c for an 80-column width. */
int pdk_diffrender_stat(const pdk_change_list *changes, int lower_dirfd, int upper_dirfd,
                        const pdk_diffrender_options *opts, pdk_buf *out, pdk_error *err)
{
    file_diff *diffs = NULL;
    size_t n = 0;
    if (compute(changes, lower_dirfd, upper_dirfd, opts, false, &diffs, &n, err) < 0)
        return -1;
    if (n == 0) {
        free_diffs(diffs, 0);
        return 0;
    }
    char **names = xcalloc(n, sizeof(char *));
    size_t max_len = 0, max_change = 0, bin_width = 0;
    int number_width = 0;
    size_t total_ins = 0, total_del = 0;
    for (size_t i = 0; i < n; i++) {
        pdk_buf b = {0};
        pdk_diffrender_quote_path(&b, "", diffs[i].change->path);
        if (dir_only(&diffs[i]))
            pdk_buf_puts(&b, "/");
        names[i] = pdk_buf_steal(&b);
        size_t len = strlen(names[i]);
        if (len > max_len)
            max_len = len;
        if (diffs[i].binary) {
            int64_t old_bytes = 0, new_bytes = 0;
            for (size_t k = 0; k < diffs[i].nsections; k++) {
                old_bytes += diffs[i].sections[k].old_bytes;
                new_bytes += diffs[i].sections[k].new_bytes;
            }
            size_t w = 14 + (size_t)decimal_width((uintmax_t)new_bytes) +
                       (size_t)decimal_width((uintmax_t)old_bytes);
            if (w > bin_width)
                bin_width = w;
            number_width = 3;
            continue;
        }
        size_t change = diffs[i].insertions + diffs[i].deletions;
        if (change > max_change)
            max_change = change;
        total_ins += diffs[i].insertions;
        total_del += diffs[i].deletions;
    }

    int width = 80;
    if (decimal_width(max_change) > number_width)
        number_width = decimal_width(max_change);
    if (width < 16 + 6 + number_width)
        width = 16 + 6 + number_width;
    long graph_width = (long)(max_change + 4 > bin_width ? max_change : bin_width - 4);
    long name_width = (long)max_len;
    if (name_width + number_width + 6 + graph_width > width) {
        if (graph_width > width * 3 / 8 - number_width - 6) {
            graph_width = width * 3 / 8 - number_width - 6;
            if (graph_width < 6)
                graph_width = 6;
        }
        if (name_width > width - number_width - 6 - graph_width)
            name_width = width - number_width - 6 - graph_width;
        else
            graph_width = width - number_width - 6 - name_width;
    }

    for (size_t i = 0; i < n; i++) {
        const char *name = names[i];
        const char *prefix = "";
        long len = name_width;
        long name_len = (long)strlen(name);
        if (name_width < name_len) {
            prefix = "...";
            len -= 3;
            if (len < 0)
                len = 0;
            while (name_len > len) {
                name++;
                name_len--;
            }
            const char *slash = strchr(name, '/');
            if (slash)
                name = slash;
        }
        pdk_buf_printf(out, " %s%-*s |", prefix, (int)len, name);
        const file_diff *d = &diffs[i];
        if (d->binary) {
            int64_t old_bytes = 0, new_bytes = 0;
            for (size_t k = 0; k < d->nsections; k++) {
                old_bytes += d->sections[k].old_bytes;
                new_bytes += d->sections[k].new_bytes;
            }
            pdk_buf_printf(out, " %*s", number_width, "Bin");
            if (old_bytes || new_bytes)
                pdk_buf_printf(out, " %lld -> %lld bytes", (long long)old_bytes,
                               (long long)new_bytes);
            pdk_buf_puts(out, "\n");
            continue;
        }
        size_t add = d->insertions, del = d->deletions;
        pdk_buf_printf(out, " %*zu%s", number_width, add + del, add + del ? " " : "");
        if (graph_width > 0 && (size_t)graph_width <= max_change) {
            size_t total = scale_linear(add + del, (size_t)graph_width, max_change);
            if (total < 2 && add && del)
                total = 2;
            if (add < del) {
                add = scale_linear(add, (size_t)graph_width, max_change);
                del = total - add;
            } else {
                del = scale_linear(del, (size_t)graph_width, max_change);
                add = total - del;
            }
        }
        put_repeat(out, '+', add);
        put_repeat(out, '-', del);
        pdk_buf_puts(out, "\n");
    }

    pdk_buf_printf(out, n == 1 ? " %zu file changed" : " %zu files changed", n);
    if (total_ins || total_del == 0)
        pdk_buf_printf(out, total_ins == 1 ? ", %zu insertion(+)" : ", %zu insertions(+)",
                       total_ins);
    if (total_del || total_ins == 0)
        pdk_buf_printf(out, total_del == 1 ? ", %zu deletion(-)" : ", %zu deletions(-)", total_del);
    pdk_buf_puts(out, "\n");

    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    free_diffs(diffs, n);
    return 0;
}

static json_t *mode_json(pdk_change_kind kind, mode_t mode)
{
    if (kind == PDK_KIND_NONE)
        return json_null();
    char buf[16];
    snprintf(buf, sizeof(buf), "%06o", pdk_change_display_mode(kind, mode));
    return json_string(buf);
}

static json_t *string_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

int pdk_diffrender_json(const pdk_change_list *changes, int lower_dirfd, int upper_dirfd,
                        const pdk_diffrender_options *opts, json_t **out, pdk_error *err)
{
    file_diff *diffs = NULL;
    size_t n = 0;
    if (compute(changes, lower_dirfd, upper_dirfd, opts, false, &diffs, &n, err) < 0)
        return -1;
    json_t *list = json_array();
    size_t total_ins = 0, total_del = 0;
    for (size_t i = 0; i < n; i++) {
        const file_diff *d = &diffs[i];
        const pdk_change *c = d->change;
        pdk_change_kind kind = c->status == PDK_CHANGE_DELETED ? c->old_kind : c->new_kind;
        json_t *o = json_object();
        json_object_set_new(o, "path", json_string(c->path));
        json_object_set_new(o, "status", json_string(pdk_change_status_name(c->status)));
        json_object_set_new(o, "kind", string_or_null(pdk_change_kind_name(kind)));
        json_object_set_new(o, "old_kind", string_or_null(pdk_change_kind_name(c->old_kind)));
        json_object_set_new(o, "old_mode", mode_json(c->old_kind, c->old_mode));
        json_object_set_new(o, "new_mode", mode_json(c->new_kind, c->new_mode));
        json_object_set_new(o, "binary", json_boolean(d->binary));
        json_object_set_new(o, "too_large", json_boolean(d->too_large));
        json_object_set_new(o, "insertions", json_integer((json_int_t)d->insertions));
        json_object_set_new(o, "deletions", json_integer((json_int_t)d->deletions));
        json_object_set_new(o, "target", string_or_null(c->new_target));
        json_object_set_new(o, "old_target", string_or_null(c->old_target));
        json_array_append_new(list, o);
        total_ins += d->insertions;
        total_del += d->deletions;
    }
    json_t *summary = json_object();
    json_object_set_new(summary, "files", json_integer((json_int_t)n));
    json_object_set_new(summary, "insertions", json_integer((json_int_t)total_ins));
    json_object_set_new(summary, "deletions", json_integer((json_int_t)total_del));
    json_t *doc = json_object();
    json_object_set_new(doc, "changes", list);
    json_object_set_new(doc, "summary", summary);
    free_diffs(diffs, n);
    *out = doc;
    return 0;
}
