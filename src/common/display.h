/* display.h: text that came from a sandbox, made safe to show a human.
 *
 * Whatever a sandboxed process chose (file names and contents, argv, cwd, the comm of its
 * processes, URLs, header names, body previews) can be shown to a human on a terminal, and
 * a terminal obeys what it is sent: "\r\033[2K" erases the line it is on, U+009B is a CSI
 * on terminals that take 8-bit controls, U+202E writes what follows right to left, and
 * invisible characters make two different strings look the same. Every output a human
 * reads passes such text through pdk_display_escape(), which writes each of those
 * characters in a visible, unambiguous form:
 *
 *   \t \n \r     tab, newline, carriage return (tab and newline kept as they are when the
 *                flags say the output's own structure needs them)
 *   \xHH         the other C0 controls (U+0000-U+001F), DEL, and every byte that is not
 *                part of valid UTF-8 (overlong forms, surrogates, stray continuation
 *                bytes: C1 controls written as single bytes 0x80-0x9F included)
 *   \uHHHH       code points that control or hide (pdk_display_code_point_hides): the C1
 *   \UHHHHHHHH   controls U+0080-U+009F, bidirectional embeddings, overrides, isolates and
 *                marks (U+202A-U+202E, U+2066-U+2069, U+200E, U+200F, U+061C), line and
 *                paragraph separators, zero-width and the other format characters (Unicode
 *                category Cf), fillers that show as nothing, tag characters, noncharacters
 *   \\           a backslash (unless PDK_DISPLAY_RAW_BACKSLASH), so that the forms above
 *                cannot be faked by the text itself
 *
 * Everything else is written as it is: printable ASCII and the valid UTF-8 of visible
 * characters (accents, CJK, emoji). A zero-width joiner or non-joiner, and a variation
 * selector (U+FE00-U+FE0F), are kept only between (after, for a selector) visible
 * non-ASCII characters, where emoji and scripts need them; next to ASCII they are
 * escaped, since "r\u200dm" would look like "rm".
 *
 * JSON that a human may read (every --json output) goes through pdk_display_json_dumps():
 * jansson escapes C0 controls, this escapes the rest of the list above as JSON \u escapes
 * (surrogate pairs beyond the BMP), so that the document means exactly the same.
 */
#ifndef PADDOCK_DISPLAY_H
#define PADDOCK_DISPLAY_H

#include "util.h"

#include <jansson.h>
#include <stdint.h>

enum {
    PDK_DISPLAY_KEEP_TAB = 1 << 0,      /* a tab as it is (file contents) */
    PDK_DISPLAY_KEEP_NEWLINE = 1 << 1,  /* a newline as it is (the output's own lines) */
    PDK_DISPLAY_RAW_BACKSLASH = 1 << 2, /* a backslash as it is (a whole message whose
                                         * parts were escaped already) */
    PDK_DISPLAY_QUOTE = 1 << 3,         /* '"' as \" too (inside "...") */
};

/* True when code point cp (a valid one) is never written as it is: a control, a
 * bidirectional or format character, an invisible filler (see above). The joiners and
 * variation selectors that depend on their neighbours are not in it. */
bool pdk_display_code_point_hides(uint32_t cp);

/* How many bytes of s (len bytes) its first max_chars characters take (a byte that is not
 * UTF-8 counts as one): where to cut it without cutting a character. */
size_t pdk_display_cut(const char *s, size_t len, size_t max_chars);

/* How many bytes at the start of s (len bytes) are valid UTF-8. */
size_t pdk_display_utf8_prefix(const char *s, size_t len);

/* True when nothing in s (len bytes) would be escaped with these flags. */
bool pdk_display_is_plain(const char *s, size_t len, unsigned flags);

/* Append s (len bytes, any bytes) to out, escaped as above. */
void pdk_display_escape(pdk_buf *out, const char *s, size_t len, unsigned flags);

/* s escaped with no flags, as a new string ("" for NULL). */
char *pdk_display(const char *s);

/* argv as one line for a human: each word escaped as pdk_display() does and, when it is
 * empty or holds anything but letters, digits and "@%+=:,./_-", in single quotes as a
 * shell reads them (a quote as '\''). New string. */
char *pdk_display_argv(char *const *argv);

/* A whole message (an error, a warning) for stderr: controls, invalid UTF-8 and hiding
 * characters escaped, backslashes and nothing else left alone (new string). */
char *pdk_display_message(const char *s);

/* json_dumps(value, flags) with every hiding code point of its strings written as a JSON
 * \u escape (new string, NULL when jansson fails). */
char *pdk_display_json_dumps(const json_t *value, size_t flags);

/* The same for a JSON text made by jansson (an audit row's data, say): new string. */
char *pdk_display_json_text(const char *text);

/* A JSON string for s (an argv word, a process name, a reason: text, not a path, which
 * goes as pdk_session_json_path writes it): s itself when it is valid UTF-8, else its
 * escaped form above (the bytes that are not UTF-8 as \xHH), so that it still shows; NULL
 * gives null. */
json_t *pdk_display_json_string(const char *s);

#endif
