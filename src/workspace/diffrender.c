/* diffrender.c: see diffrender.h. */
#include "diffrender.h"

#include "display.h"
#include "fsutil.h"
#include "session.h"
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
    const char *old_type, *new_type; /* what each side is (pdk_diffrender_file_type) */
    size_t escaped_lines;            /* of the hunks, shown escaped (not raw) */
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
    char *data; /* all of it; only its first bytes when too_large */
    size_t len;
    bool too_large;
} side_content;

/* How much of a file too large to diff is read to tell its type. */
#define TYPE_PROBE 512

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
    if ((uint64_t)st.st_size <= PDK_TEXTDIFF_MAX_SIZE) {
        if (pdk_read_all(fd, &out->data, &out->len, PDK_TEXTDIFF_MAX_SIZE) == 0)
            return 0;
        if (errno != EFBIG)
            return pdk_error_set(err, errno, "cannot read %s \"%s\"", where, c->path);
    }
    /* Too large to diff: its first bytes say what it is. */
    out->too_large = true;
    out->data = xmalloc(TYPE_PROBE);
    ssize_t n = pread(fd, out->data, TYPE_PROBE, 0);
    out->len = n > 0 ? (size_t)n : 0;
    return 0;
}

static bool starts(const unsigned char *d, size_t len, size_t at, const char *magic, size_t n)
{
    return len >= at + n && memcmp(d + at, magic, n) == 0;
}

/* An ELF file's class and type. */
static const char *elf_type(const unsigned char *d, size_t len)
{
    static const char *const names[2][5] = {
        {"ELF 32-bit file", "ELF 32-bit relocatable object", "ELF 32-bit executable",
         "ELF 32-bit executable or shared library", "ELF 32-bit core dump"},
        {"ELF 64-bit file", "ELF 64-bit relocatable object", "ELF 64-bit executable",
         "ELF 64-bit executable or shared library", "ELF 64-bit core dump"},
    };
    if (len < 18 || (d[4] != 1 && d[4] != 2) || (d[5] != 1 && d[5] != 2))
        return "ELF file";
    unsigned type = d[5] == 1 ? (unsigned)(d[16] | d[17] << 8) : (unsigned)(d[16] << 8 | d[17]);
    return names[d[4] - 1][type >= 1 && type <= 4 ? type : 0];
}

const char *pdk_diffrender_file_type(const char *data, size_t len)
{
    const unsigned char *d = (const unsigned char *)data;
    static const struct {
        size_t at;
        const char *magic;
        size_t n;
        const char *name;
    } magics[] = {
        {0, "\x89PNG\r\n\x1a\n", 8, "PNG image"},
        {0, "\xff\xd8\xff", 3, "JPEG image"},
        {0, "GIF87a", 6, "GIF image"},
        {0, "GIF89a", 6, "GIF image"},
        {0, "II*\0", 4, "TIFF image"},
        {0, "MM\0*", 4, "TIFF image"},
        {0, "\0\0\1\0", 4, "ICO image"},
        {0, "%PDF-", 5, "PDF document"},
        {0, "\x1f\x8b", 2, "gzip compressed data"},
        {0, "BZh", 3, "bzip2 compressed data"},
        {0,
         "\xfd"
         "7zXZ\0",
         6, "xz compressed data"},
        {0, "\x28\xb5\x2f\xfd", 4, "zstd compressed data"},
        {0, "PK\3\4", 4, "Zip archive"},
        {0, "PK\5\6", 4, "Zip archive"},
        {0, "PK\7\x08", 4, "Zip archive"},
        {257, "ustar", 5, "tar archive"},
        {0, "7z\xbc\xaf\x27\x1c", 6, "7-zip archive"},
        {0, "Rar!\x1a\x07", 6, "RAR archive"},
        {0, "!<arch>\n", 8, "ar archive"},
        {0, "\xed\xab\xee\xdb", 4, "RPM package"},
        {0, "SQLite format 3\0", 16, "SQLite database"},
        {0, "\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1", 8, "OLE2 document"},
        {0, "\xca\xfe\xba\xbe", 4, "Java class file or Mach-O universal binary"},
        {0, "\xfe\xed\xfa\xce", 4, "Mach-O binary"},
        {0, "\xfe\xed\xfa\xcf", 4, "Mach-O binary"},
        {0, "\xce\xfa\xed\xfe", 4, "Mach-O binary"},
        {0, "\xcf\xfa\xed\xfe", 4, "Mach-O binary"},
        {0, "MZ", 2, "DOS/Windows executable"},
        {0, "\0asm", 4, "WebAssembly module"},
        {0, "dex\n", 4, "Android Dalvik executable"},
        {0, "wOFF", 4, "WOFF font"},
        {0, "wOF2", 4, "WOFF2 font"},
        {0, "OTTO", 4, "OpenType font"},
        {0, "\0\1\0\0\0", 5, "TrueType font"},
        {0, "ID3", 3, "MP3 audio"},
        {0, "OggS", 4, "Ogg media"},
        {0, "fLaC", 4, "FLAC audio"},
        {4, "ftyp", 4, "ISO media (MP4, QuickTime, HEIF)"},
        {0, "\x1a\x45\xdf\xa3", 4, "Matroska or WebM media"},
        {0, "\x93NUMPY", 6, "NumPy array"},
        {0, "GGUF", 4, "GGUF model"},
        {0, "DIRC", 4, "git index"},
        {0, "PACK", 4, "git pack"},
        {0,
         "\0\0\0\1"
         "Bud1",
         8, "macOS .DS_Store"},
    };
    if (starts(d, len, 0,
               "\x7f"
               "ELF",
               4))
        return elf_type(d, len);
    if (starts(d, len, 0, "RIFF", 4) && len >= 12)
        return starts(d, len, 8, "WEBP", 4)   ? "WebP image"
               : starts(d, len, 8, "WAVE", 4) ? "WAV audio"
               : starts(d, len, 8, "AVI ", 4) ? "AVI video"
                                              : "RIFF data";
    for (size_t i = 0; i < PDK_ARRAY_SIZE(magics); i++)
        if (starts(d, len, magics[i].at, magics[i].magic, magics[i].n))
            return magics[i].name;
    if (len >= 10 && d[0] == 'B' && d[1] == 'M' && !d[6] && !d[7] && !d[8] && !d[9])
        return "BMP image";
    if (len >= 2 && d[0] == 0x80 && d[1] >= 2 && d[1] <= 5)
        return "Python pickle (runs code when loaded)";
    if (len >= 16 && d[2] == '\r' && d[3] == '\n' && d[5] == 0 && d[6] == 0 && d[7] == 0)
        return "Python bytecode";
    if (len >= 9 && d[8] == '{' && !d[5] && !d[6] && !d[7]) {
        uint64_t header = 0;
        for (int i = 7; i >= 0; i--)
            header = header << 8 | d[i];
        if (header >= 2 && header < (1u << 24))
            return "safetensors tensors";
    }
    return NULL;
}

/* Whether a side is shown as binary: a type recognised from its first bytes, and bytes no
 * text has (a NUL, or what is not UTF-8) among its first ones. Anything else is text, its
 * controls shown escaped: a script after a NUL, or a file of a type not in the list,
 * cannot hide what it would run. */
static const char *binary_type(const side_content *side)
{
    const char *type = pdk_diffrender_file_type(side->data, side->len);
    if (!type)
        return NULL;
    size_t probe = side->len < PDK_TEXTDIFF_BINARY_PROBE ? side->len : PDK_TEXTDIFF_BINARY_PROBE;
    if (memchr(side->data, '\0', probe))
        return type;
    /* not UTF-8 (control characters alone do not make it binary); the probe may end in
     * the middle of a character */
    size_t valid = pdk_display_utf8_prefix(side->data, probe);
    return valid < probe && (probe == side->len || probe - valid > 3) ? type : NULL;
}

/* Human display: every line of the hunks whose text a terminal would obey (a control
 * character, a bidi or invisible one, bytes that are not UTF-8) is written escaped after a
 * '!', which starts no line of a patch: such a diff is visibly, and for git apply, not a
 * patch to apply as it is. Tabs stay, and so does a line whose only backslashes are its
 * own. Returns how many lines were escaped. */
static size_t escape_hunks(pdk_buf *hunks)
{
    pdk_buf out = {0};
    size_t escaped = 0;
    const char *p = hunks->data, *end = hunks->data + hunks->len;
    while (p < end) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t text = nl ? (size_t)(nl - p) : (size_t)(end - p);
        size_t whole = nl ? text + 1 : text;
        bool content = text > 0 && (p[0] == ' ' || p[0] == '+' || p[0] == '-');
        /* a backslash alone does not mark a line; in a marked one it is doubled */
        if (content && !pdk_display_is_plain(p + 1, text - 1,
                                             PDK_DISPLAY_KEEP_TAB | PDK_DISPLAY_RAW_BACKSLASH)) {
            pdk_buf_append(&out, "!", 1);
            pdk_buf_append(&out, p, 1);
            pdk_display_escape(&out, p + 1, text - 1, PDK_DISPLAY_KEEP_TAB);
            pdk_buf_append(&out, "\n", nl ? 1 : 0);
            escaped++;
        } else {
            pdk_buf_append(&out, p, whole);
        }
        p += whole;
    }
    if (escaped) {
        pdk_buf_free(hunks);
        *hunks = out;
    } else {
        pdk_buf_free(&out);
    }
    return escaped;
}

static int fill_section(section *s, const pdk_change *c, int lower_dirfd, int upper_dirfd,
                        unsigned context, bool want_hunks, bool raw, pdk_error *err)
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
    bool has_old = s->type != SECTION_ADD, has_new = s->type != SECTION_DELETE;
    if (has_old && c->old_kind == PDK_KIND_FILE)
        s->old_type = pdk_diffrender_file_type(old_side.data, old_side.len);
    if (has_new && c->new_kind == PDK_KIND_FILE)
        s->new_type = pdk_diffrender_file_type(new_side.data, new_side.len);
    if (old_side.too_large || new_side.too_large) {
        s->binary = s->too_large = true;
        goto out;
    }
    if (raw) {
        /* git's rule: a NUL among the first bytes */
        s->binary = pdk_textdiff_is_binary(old_side.data, old_side.len) ||
                    pdk_textdiff_is_binary(new_side.data, new_side.len);
    } else {
        /* binary only when every side is a binary type: a text side is never hidden */
        s->binary = (!has_old || c->old_kind != PDK_KIND_FILE || binary_type(&old_side)) &&
                    (!has_new || c->new_kind != PDK_KIND_FILE || binary_type(&new_side)) &&
                    ((has_old && c->old_kind == PDK_KIND_FILE) ||
                     (has_new && c->new_kind == PDK_KIND_FILE));
    }
    if (s->binary)
        goto out;
    pdk_textdiff_unified(old_side.data ? old_side.data : "", old_side.len,
                         new_side.data ? new_side.data : "", new_side.len, context,
                         want_hunks ? &s->hunks : NULL, &s->stats);
    if (want_hunks && !raw)
        s->escaped_lines = escape_hunks(&s->hunks);
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
                   const pdk_diffrender_options *opts, bool want_hunks, bool raw, file_diff **out,
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
                fill_section(s, c, lower_dirfd, upper_dirfd, context, want_hunks, raw, err) < 0) {
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

/* " (PNG image, 1234 bytes)": what a binary side is, for a human. */
static void put_side_type(pdk_buf *out, const char *type, bool too_large, int64_t bytes)
{
    pdk_buf_printf(out, " (%s%s%s%lld byte%s)", type ? type : "", type ? ", " : "",
                   too_large ? "too large to diff, " : "", (long long)bytes, bytes == 1 ? "" : "s");
}

/* git's "Binary files a/P and b/P differ"; for a human, each side's type and size too
 * (still ending in " differ", so that git apply refuses it as a binary patch without its
 * index line rather than taking it for something else). */
static void put_binary_line(pdk_buf *out, const char *old_path, const char *new_path,
                            const section *s, bool raw)
{
    pdk_buf_puts(out, "Binary files ");
    if (old_path) {
        pdk_diffrender_quote_path(out, "a/", old_path);
        if (!raw)
            put_side_type(out, s->old_type, s->too_large, s->old_bytes);
    } else {
        pdk_buf_puts(out, "/dev/null");
    }
    pdk_buf_puts(out, " and ");
    if (new_path) {
        pdk_diffrender_quote_path(out, "b/", new_path);
        if (!raw)
            put_side_type(out, s->new_type, s->too_large, s->new_bytes);
    } else {
        pdk_buf_puts(out, "/dev/null");
    }
    pdk_buf_puts(out, " differ\n");
}

static void put_section(pdk_buf *out, const char *path, const section *s, bool raw)
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
        put_binary_line(out, old_path, new_path, s, raw);
        return;
    }
    if (s->hunks.len == 0)
        return;
    put_file_line(out, "--- ", "a/", old_path);
    put_file_line(out, "+++ ", "b/", new_path);
    pdk_buf_append(out, s->hunks.data, s->hunks.len);
}

/* The bits of a mode that matter beyond its owner's: "set-user-ID, world-writable". */
static void put_special_bits(pdk_buf *out, mode_t mode)
{
    static const struct {
        mode_t bit;
        const char *name;
    } bits[] = {{S_ISUID, "set-user-ID"},
                {S_ISGID, "set-group-ID"},
                {S_ISVTX, "sticky"},
                {S_IWOTH, "world-writable"}};
    bool any = false;
    for (size_t i = 0; i < PDK_ARRAY_SIZE(bits); i++) {
        if (!(mode & bits[i].bit))
            continue;
        pdk_buf_printf(out, "%s%s", any ? ", " : " (", bits[i].name);
        any = true;
    }
    if (any)
        pdk_buf_puts(out, ")");
}

/* Directories have no "diff --git" block (git knows no directories): for a human, a line
 * of their own when their mode changes, or a new one has bits beyond its owner's. Not a
 * patch line: git apply passes over it. */
static void put_dir_mode(pdk_buf *out, const pdk_change *c)
{
    if (c->new_kind != PDK_KIND_DIR)
        return;
    mode_t special = S_ISUID | S_ISGID | S_ISVTX | S_IWOTH;
    bool added = c->status == PDK_CHANGE_ADDED || c->status == PDK_CHANGE_TYPE_CHANGED;
    if (added && !(c->new_mode & special))
        return;
    if (!added && (c->old_mode & 07777) == (c->new_mode & 07777))
        return;
    pdk_buf_puts(out, added ? "new directory " : "directory ");
    _cleanup_free_ char *slashed = xasprintf("%s/", c->path);
    pdk_diffrender_quote_path(out, "", slashed);
    if (added)
        pdk_buf_printf(out, " mode %06o", pdk_change_display_mode(c->new_kind, c->new_mode));
    else
        pdk_buf_printf(out, " mode %06o -> %06o", pdk_change_display_mode(c->old_kind, c->old_mode),
                       pdk_change_display_mode(c->new_kind, c->new_mode));
    put_special_bits(out, c->new_mode);
    pdk_buf_puts(out, "\n");
}

int pdk_diffrender_patch(const pdk_change_list *changes, int lower_dirfd, int upper_dirfd,
                         const pdk_diffrender_options *opts, pdk_buf *out, pdk_error *err)
{
    file_diff *diffs = NULL;
    size_t n = 0;
    bool raw = opts && opts->raw;
    if (compute(changes, lower_dirfd, upper_dirfd, opts, true, raw, &diffs, &n, err) < 0)
        return -1;
    size_t escaped = 0;
    for (size_t i = 0; i < n; i++) {
        if (!raw)
            put_dir_mode(out, diffs[i].change);
        for (size_t k = 0; k < diffs[i].nsections; k++) {
            put_section(out, diffs[i].change->path, &diffs[i].sections[k], raw);
            escaped += diffs[i].sections[k].escaped_lines;
        }
    }
    if (opts && opts->escaped_lines)
        *opts->escaped_lines = escaped;
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
    if (compute(changes, lower_dirfd, upper_dirfd, opts, false, opts && opts->raw, &diffs, &n,
                err) < 0)
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
    /* the binary flag by git's rule: this is for programs */
    if (compute(changes, lower_dirfd, upper_dirfd, opts, false, true, &diffs, &n, err) < 0)
        return -1;
    json_t *list = json_array();
    size_t total_ins = 0, total_del = 0;
    for (size_t i = 0; i < n; i++) {
        const file_diff *d = &diffs[i];
        const pdk_change *c = d->change;
        pdk_change_kind kind = c->status == PDK_CHANGE_DELETED ? c->old_kind : c->new_kind;
        json_t *o = json_object();
        json_object_set_new(o, "path", pdk_session_json_path(c->path));
        json_object_set_new(o, "status", json_string(pdk_change_status_name(c->status)));
        json_object_set_new(o, "kind", string_or_null(pdk_change_kind_name(kind)));
        json_object_set_new(o, "old_kind", string_or_null(pdk_change_kind_name(c->old_kind)));
        json_object_set_new(o, "old_mode", mode_json(c->old_kind, c->old_mode));
        json_object_set_new(o, "new_mode", mode_json(c->new_kind, c->new_mode));
        json_object_set_new(o, "binary", json_boolean(d->binary));
        json_object_set_new(o, "too_large", json_boolean(d->too_large));
        json_object_set_new(o, "insertions", json_integer((json_int_t)d->insertions));
        json_object_set_new(o, "deletions", json_integer((json_int_t)d->deletions));
        json_object_set_new(o, "target",
                            c->new_target ? pdk_session_json_path(c->new_target) : json_null());
        json_object_set_new(o, "old_target",
                            c->old_target ? pdk_session_json_path(c->old_target) : json_null());
        /* what the file is, when its first bytes say (pdk_diffrender_file_type) */
        const char *type = NULL;
        for (size_t k = 0; k < d->nsections && !type; k++) {
            const section *sec = &d->sections[d->nsections - 1 - k];
            type = sec->type == SECTION_DELETE ? sec->old_type : sec->new_type;
        }
        json_object_set_new(o, "type", string_or_null(type));
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
