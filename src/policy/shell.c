/* shell.c: the shell splitter of the command policy (see shell.h).
 *
 * A recursive-descent parser over the script text with a one-token lookahead:
 *
 *   list      := { newline } [ and_or { (; | & | newline) { newline } and_or } ]
 *   and_or    := pipeline { (&& | ||) { newline } pipeline }
 *   pipeline  := [ ! ] command { (| | |&) { newline } command }
 *   command   := ( list ) | { list } | if | while | until | for | case | [[ ... ]]
 *              | (( ... )) | function | simple
 *                (compound commands may be followed by redirections)
 *   function  := NAME ( ) compound | function NAME [ ( ) ] compound
 *   simple    := { assignment | redirection } [ word { word | redirection } ]
 *
 * Substitutions are parsed while their word is read: $( ) and <( ) >( ) by the same parser
 * on the same text (up to its ')'), ` ` by a sub-parser on the unescaped inner text. Their
 * commands are listed as they are found, which is before the command that holds the word.
 * Here-documents are read at the newline that ends their line; an unquoted one's
 * substitutions are parsed like those of a double-quoted string. Text that a command runs
 * (eval, trap, an alias, a sourced file) is parsed by a sub-parser that shares the state:
 * the commands listed, the functions and aliases defined.
 *
 * The first construct the parser does not reduce records a reason and stops everything;
 * pdk_shell_split() then drops what was listed. Reasons are static strings or xasprintf'd.
 */
#include "shell.h"

#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

/* Nesting bound for ( ), { }, if/while/for bodies, substitutions, expansions and the texts
 * commands run: keeps the recursion (and the fuzzer's stack) bounded. Real scripts stay far
 * below it. */
#define MAX_DEPTH 64
/* Sourced files within sourced files. */
#define MAX_SOURCE_DEPTH 8
/* What sourced files, and the texts of eval, trap and aliases, may add up to: an alias
 * expanding to two others doubles the text each level. */
#define MAX_SOURCED_BYTES  ((size_t)4 << 20)
#define MAX_REPARSED_BYTES ((size_t)1 << 20)

enum token_kind {
    T_EOF,
    T_WORD,
    T_NEWLINE,
    T_SEMI,      /* ; */
    T_DSEMI,     /* ;; */
    T_SEMI_AMP,  /* ;& */
    T_DSEMI_AMP, /* ;;& */
    T_AMP,       /* & */
    T_AND,       /* && */
    T_OR,        /* || */
    T_PIPE,      /* | */
    T_PIPE_AMP,  /* |& */
    T_LPAREN,    /* ( */
    T_DLPAREN,   /* (( */
    T_RPAREN,    /* ) */
    T_REDIR,     /* any redirection operator, with its fd digits */
    T_ERROR,     /* the lexer failed; the reason is set */
};

/* Word flags. */
#define W_QUOTED      0x001u /* some part quoted or backslash-escaped: not a reserved word */
#define W_CMDSUBST    0x002u /* contains $( ) or ` ` */
#define W_PARAM       0x004u /* contains $NAME, $1, $@, ${...} */
#define W_ARITH       0x008u /* contains $(( )) */
#define W_GLOB        0x010u /* unquoted * ? [ */
#define W_BRACE       0x020u /* unquoted { or } (brace expansion in bash, zsh, ksh) */
#define W_LEADING     0x040u /* starts with an unquoted ~ or = (tilde, zsh =cmd) */
#define W_ASSIGN      0x080u /* NAME=... */
#define W_BASH_ASSIGN 0x100u /* NAME+=... or NAME[...]=...: an assignment only to some shells */
#define W_PROCSUBST   0x200u /* contains <( ) or >( ) */
#define W_ARRAY       0x400u /* NAME=( ... ), bash's array assignment */
/* What makes the shell's word differ from its text here: it is not literal. */
#define W_EXPANDS                                                                                  \
    (W_CMDSUBST | W_PARAM | W_ARITH | W_GLOB | W_BRACE | W_LEADING | W_PROCSUBST | W_ARRAY)

struct token {
    enum token_kind kind;
    char *text; /* T_WORD: the word after quote removal (owned) */
    unsigned flags;
    bool heredoc;    /* T_REDIR: << or <<- */
    bool strip_tabs; /* T_REDIR: <<- */
    bool output;     /* T_REDIR: it may write a file (>, >>, >|, <>, &>, >&WORD) */
    bool dup;        /* T_REDIR: the operator is < or > alone (a word inside [[ ]]) */
    char op;         /* T_REDIR: '<' or '>' for dup */
};

struct function_def {
    char *name;
    bool runs_arguments; /* its body runs "$@" as a command */
    bool shifts;         /* ... and `shift`s them: any of their tails may run */
    bool sets;           /* ... or `set`s them to what paddock does not see */
};

struct alias_def {
    char *name;
    char *value;
    bool expanding; /* its expansion is being parsed: not expanded again inside */
};

struct state {
    pdk_shell_command *commands;
    size_t count;
    size_t cap;
    char *reason; /* the first failure */
    const pdk_shell_options *options;
    bool bash; /* the shell is bash: its own syntax is reduced */
    struct function_def *functions;
    size_t nfunctions;
    struct alias_def *aliases;
    size_t naliases;
    ssize_t defining; /* the function whose body is parsed, or -1 */
    unsigned source_depth;
    size_t sourced_bytes;
    size_t reparsed_bytes;
    /* Something listed so far could have changed HOME (an assignment, a command other than
     * a test, an expansion that assigns): $HOME in a sourced path is then unknown. */
    bool home_may_change;
    char **written; /* literal targets of output redirections */
    char **sourced; /* the paths of the files read */
};

/* A here-document whose body comes after the next newline. */
struct heredoc {
    char *delimiter;
    bool strip_tabs;
    bool quoted; /* the body is literal */
    unsigned nest;
};

struct parser {
    const char *s;
    size_t pos;
    unsigned depth;
    unsigned nest; /* $( ), <( ) and arrays open on this text */
    struct heredoc *heredocs;
    size_t nheredocs;
    struct token peek;
    bool have_peek;
    struct state *st;
};

static bool failed(const struct parser *p)
{
    return p->st->reason != NULL;
}

/* Record the first reason; later ones are consequences. Returns false for "return fail()". */
static bool fail(struct parser *p, const char *reason)
{
    if (!p->st->reason)
        p->st->reason = xstrdup(reason);
    return false;
}

static bool fail_take(struct parser *p, char *reason)
{
    if (!p->st->reason)
        p->st->reason = reason;
    else
        free(reason);
    return false;
}

static void token_clear(struct token *t)
{
    free(t->text);
    memset(t, 0, sizeof(*t));
}

static bool is_name_start(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static bool is_name_char(char c)
{
    return is_name_start(c) || (c >= '0' && c <= '9');
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* Characters that end an unquoted word. */
static bool is_meta(char c)
{
    return c == '\0' || c == ' ' || c == '\t' || c == '\n' || c == ';' || c == '&' || c == '|' ||
           c == '<' || c == '>' || c == '(' || c == ')';
}

/* Index after any backslash-newline pairs at i (line continuations vanish before tokens). */
static size_t skip_continuations(const char *s, size_t i)
{
    while (s[i] == '\\' && s[i + 1] == '\n')
        i += 2;
    return i;
}

/* The character at i after continuations; *next gets the index after it. */
static char char_at(const char *s, size_t i, size_t *next)
{
    i = skip_continuations(s, i);
    *next = s[i] ? i + 1 : i;
    return s[i];
}

static bool parse_list(struct parser *p, size_t *and_or_count);
static bool parse_command(struct parser *p);
static void parse_script_text(struct parser *parent, const char *text);
static bool read_dollar(struct parser *p, bool in_dquote, pdk_buf *word, unsigned *flags);
static bool read_backquote(struct parser *p, bool in_dquote, size_t start, pdk_buf *word);
static bool read_word(struct parser *p, struct token *t);

static void append_char(pdk_buf *b, char c)
{
    pdk_buf_append(b, &c, 1);
}

/* A line break inside quotes or an expansion, while a here-document waits for its body
 * (which the shell reads after the newline that ends the line, not this one): refused. */
static bool check_line_break(struct parser *p, size_t from, size_t to)
{
    if (p->nheredocs > 0 && memchr(p->s + from, '\n', to - from))
        return fail(p, "a line break inside quotes before a here-document's body");
    return true;
}

/* ---- the state: what is listed, functions, aliases ---- */

static ssize_t find_function(const struct state *st, const char *name)
{
    for (size_t i = 0; i < st->nfunctions; i++)
        if (strcmp(st->functions[i].name, name) == 0)
            return (ssize_t)i;
    return -1;
}

static struct alias_def *find_alias(struct state *st, const char *name)
{
    for (size_t i = 0; i < st->naliases; i++)
        if (strcmp(st->aliases[i].name, name) == 0)
            return &st->aliases[i];
    return NULL;
}

/* Whether a command named name was listed already. */
static bool name_listed(const struct state *st, const char *name)
{
    for (size_t i = 0; i < st->count; i++)
        if (strcmp(st->commands[i].argv[0], name) == 0)
            return true;
    return false;
}

/* Whether name is one of the NULL-terminated names. */
static bool is_one_of(const char *name, const char *const *names)
{
    for (size_t i = 0; names[i]; i++)
        if (strcmp(name, names[i]) == 0)
            return true;
    return false;
}

/* Tests and no-ops: commands that cannot change a variable. */
static bool changes_nothing(const char *name)
{
    static const char *const names[] = {"[", "test", "true", "false", ":", NULL};
    return is_one_of(name, names);
}

/* List a copy of argv (and of assignments, which may be NULL). */
static void list_command(struct parser *p, char *const *argv, char *const *assignments)
{
    struct state *st = p->st;
    if (st->count == st->cap) {
        st->cap = st->cap ? st->cap * 2 : 8;
        st->commands = xrealloc(st->commands, st->cap * sizeof(*st->commands));
    }
    char **a = assignments ? pdk_strv_copy(assignments) : NULL;
    if (!a)
        a = xcalloc(1, sizeof(char *));
    if (a[0] || !changes_nothing(argv[0]))
        st->home_may_change = true;
    st->commands[st->count++] = (pdk_shell_command){.argv = pdk_strv_copy(argv), .assignments = a};
}

/* ---- expansions inside words ---- */

/* $(( ... )) and (( ... )): pos is after the "((". Append it verbatim when it is plain
 * arithmetic (names, numbers, operators, $NAME), whose variables' values the shell evaluates
 * as arithmetic too. */
static bool read_arithmetic(struct parser *p, size_t start, pdk_buf *word)
{
    const char *s = p->s;
    size_t i = p->pos;
    int depth = 0;
    p->st->home_may_change = true; /* arithmetic assigns */
    for (;;) {
        char c = s[i];
        if (c == '\0')
            return fail(p, "unterminated arithmetic expansion");
        if (c == '`' || c == '\'' || c == '"' || c == '\\' || (c == '$' && s[i + 1] == '(') ||
            (c == '$' && s[i + 1] == '{'))
            return fail(p, "complex arithmetic expansion");
        if (c == '(') {
            depth++;
        } else if (c == ')') {
            if (depth == 0) {
                if (s[i + 1] != ')') /* $( (...) ...): a subshell inside $( ), or broken */
                    return fail(p, "ambiguous $((");
                i += 2;
                break;
            }
            depth--;
        }
        i++;
    }
    if (!check_line_break(p, p->pos, i))
        return false;
    pdk_buf_append(word, s + start, i - start);
    p->pos = i;
    return true;
}

/* The inside of a double-quoted string: pos is after the opening quote, and is left after
 * the closing one. The text after quote removal goes to word. */
static bool read_dquoted(struct parser *p, pdk_buf *word, unsigned *flags)
{
    const char *s = p->s;
    for (;;) {
        size_t j = p->pos;
        char d = s[j];
        if (d == '\0')
            return fail(p, "unterminated double quote");
        if (d == '"') {
            p->pos++;
            return true;
        }
        if (d == '\n' && !check_line_break(p, j, j + 1))
            return false;
        if (d == '\\') {
            char n = s[j + 1];
            if (n == '\n') {
                p->pos += 2;
            } else if (n == '"' || n == '\\' || n == '$' || n == '`') {
                append_char(word, n);
                p->pos += 2;
            } else {
                append_char(word, '\\');
                p->pos++;
            }
        } else if (d == '$') {
            if (!read_dollar(p, true, word, flags))
                return false;
        } else if (d == '`') {
            p->pos++;
            *flags |= W_CMDSUBST;
            if (!read_backquote(p, true, j, word))
                return false;
        } else {
            append_char(word, d);
            p->pos++;
        }
    }
}

/* ${ ... }: pos is after "${". Appended verbatim; what it holds is read for the
 * substitutions inside (${x:-$(cmd)} runs cmd), quotes included ("${1+"$@"}"). Forms whose
 * end paddock cannot be sure of (a } or a substitution inside single quotes, a { or ( of
 * their own, a line break) are refused. */
static bool read_braced_param(struct parser *p, size_t start, pdk_buf *word, bool in_dquote,
                              unsigned *flags)
{
    const char *s = p->s;
    size_t content = p->pos;
    if (++p->depth > MAX_DEPTH) {
        p->depth--;
        return fail(p, "nesting too deep");
    }
    pdk_buf scratch = {0}; /* the inner words, not needed: the text is kept verbatim */
    bool ok = false;
    for (;;) {
        size_t i = p->pos;
        char c = s[i];
        if (c == '}')
            break;
        if (c == '\0') {
            fail(p, "unterminated ${");
            goto out;
        }
        if (c == '\n' || c == '{' || c == '(') {
            fail(p, "complex parameter expansion");
            goto out;
        }
        if (c == '\\') {
            if (s[i + 1] == '\0' || s[i + 1] == '\n') {
                fail(p, "complex parameter expansion");
                goto out;
            }
            p->pos += 2;
        } else if (c == '\'') {
            /* Quoting even inside double quotes, where the quotes stay and what they hold
             * is expanded: a } or a substitution in them is refused. */
            const char *end = strchr(s + i + 1, '\'');
            if (!end) {
                fail(p, "unterminated single quote");
                goto out;
            }
            size_t n = (size_t)(end - (s + i + 1));
            if (memchr(s + i + 1, '}', n) || memchr(s + i + 1, '$', n) ||
                memchr(s + i + 1, '`', n) || memchr(s + i + 1, '\n', n)) {
                fail(p, "complex parameter expansion");
                goto out;
            }
            p->pos = (size_t)(end - s) + 1;
        } else if (c == '"') {
            p->pos++;
            if (!read_dquoted(p, &scratch, flags))
                goto out;
        } else if (c == '$') {
            if (!read_dollar(p, in_dquote, &scratch, flags))
                goto out;
        } else if (c == '`') {
            p->pos++;
            *flags |= W_CMDSUBST;
            if (!read_backquote(p, in_dquote, i, &scratch))
                goto out;
        } else {
            p->pos++;
        }
    }
    if (p->pos == content) {
        fail(p, "bad substitution ${}");
        goto out;
    }
    /* ${x@P} expands a value as a prompt, substitutions included. */
    for (size_t i = content; i + 1 < p->pos; i++)
        if (s[i] == '@' && s[i + 1] == 'P') {
            fail(p, "prompt expansion ${...@P}");
            goto out;
        }
    /* ${x=v} and ${x:=v} assign; subscripts (${a[i]}) and indirection (${!x}) evaluate
     * variables' values. */
    for (size_t i = content; i < p->pos; i++)
        if (s[i] == '=' || s[i] == '[' || s[i] == '!')
            p->st->home_may_change = true;
    p->pos++;
    pdk_buf_append(word, s + start, p->pos - start);
    ok = true;
out:
    p->depth--;
    pdk_buf_free(&scratch);
    return ok;
}

/* ` ... `: pos is after the opening backquote. The inner text, unescaped, is a script. */
static bool read_backquote(struct parser *p, bool in_dquote, size_t start, pdk_buf *word)
{
    const char *s = p->s;
    size_t i = p->pos;
    pdk_buf inner = {0};
    for (;;) {
        char c = s[i];
        if (c == '\0') {
            pdk_buf_free(&inner);
            return fail(p, "unterminated backquote");
        }
        if (c == '`')
            break;
        if (c == '\\') {
            char n = s[i + 1];
            if (n == '$' || n == '`' || n == '\\' || (in_dquote && n == '"')) {
                append_char(&inner, n);
                i += 2;
                continue;
            }
            if (n == '\0') {
                pdk_buf_free(&inner);
                return fail(p, "unterminated backquote");
            }
        }
        append_char(&inner, c);
        i++;
    }
    i++;
    if (!check_line_break(p, start, i)) {
        pdk_buf_free(&inner);
        return false;
    }
    char *text = pdk_buf_steal(&inner);
    parse_script_text(p, text);
    free(text);
    if (failed(p))
        return false;
    pdk_buf_append(word, s + start, i - start);
    p->pos = i;
    return true;
}

/* $( ... ), <( ... ), >( ... ): pos is after the "(". The same parser reads the commands up
 * to the ')'. */
static bool read_command_substitution(struct parser *p, size_t start, pdk_buf *word)
{
    if (p->have_peek) /* a word is read only with an empty lookahead */
        abort();
    size_t count;
    size_t heredocs = p->nheredocs;
    p->nest++;
    bool ok = parse_list(p, &count);
    bool closed = ok && p->have_peek && p->peek.kind == T_RPAREN;
    p->nest--;
    if (p->have_peek) {
        token_clear(&p->peek);
        p->have_peek = false;
    }
    if (!ok)
        return false;
    if (!closed)
        return fail(p, "unterminated command substitution");
    if (p->nheredocs > heredocs)
        return fail(p, "unterminated here-document");
    pdk_buf_append(word, p->s + start, p->pos - start);
    return true;
}

/* $'...' (bash): pos is at the $. The text with its escapes decoded goes to word, as bash
 * decodes them (a NUL ends the text); escapes whose meaning depends on the locale or that
 * paddock does not decode (\u, \U, \c) are refused. */
static bool read_ansi_c(struct parser *p, pdk_buf *word)
{
    const char *s = p->s;
    size_t i = p->pos + 2;
    size_t from = p->pos;
    bool ended = false; /* a NUL: the rest is dropped */
    for (;;) {
        char c = s[i];
        if (c == '\0')
            return fail(p, "unterminated $'");
        if (c == '\'')
            break;
        if (c != '\\') {
            if (!ended)
                append_char(word, c);
            i++;
            continue;
        }
        char e = s[i + 1];
        int value = -1;
        size_t used = 2;
        switch (e) {
        case 'a':
            value = 7;
            break;
        case 'b':
            value = 8;
            break;
        case 'e':
        case 'E':
            value = 27;
            break;
        case 'f':
            value = 12;
            break;
        case 'n':
            value = 10;
            break;
        case 'r':
            value = 13;
            break;
        case 't':
            value = 9;
            break;
        case 'v':
            value = 11;
            break;
        case '\\':
        case '\'':
        case '"':
        case '?':
            value = (unsigned char)e;
            break;
        case 'x': {
            int v = 0, n = 0;
            while (n < 2) {
                char h = s[i + 2 + n];
                int d = h >= '0' && h <= '9'   ? h - '0'
                        : h >= 'a' && h <= 'f' ? h - 'a' + 10
                        : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                               : -1;
                if (d < 0)
                    break;
                v = v * 16 + d;
                n++;
            }
            if (n == 0) {
                value = -2; /* "\x" stays as it is */
            } else {
                value = v;
                used = 2 + (size_t)n;
            }
            break;
        }
        case 'u':
        case 'U':
        case 'c':
            return fail(p, "an escape of $'...' paddock does not decode");
        case '\0':
            return fail(p, "unterminated $'");
        default:
            if (e >= '0' && e <= '7') {
                int v = 0, n = 0;
                while (n < 3 && s[i + 1 + n] >= '0' && s[i + 1 + n] <= '7') {
                    v = v * 8 + (s[i + 1 + n] - '0');
                    n++;
                }
                value = v & 0xff;
                used = 1 + (size_t)n;
            } else {
                value = -2; /* an unknown escape stays as it is */
            }
            break;
        }
        if (value == -2) {
            if (!ended) {
                append_char(word, '\\');
                append_char(word, e);
            }
        } else if (value == 0) {
            ended = true;
        } else if (!ended) {
            append_char(word, (char)value);
        }
        i += used;
    }
    i++;
    if (!check_line_break(p, from, i))
        return false;
    p->pos = i;
    return true;
}

/* A $ at pos (unquoted, or inside double quotes when in_dquote). */
static bool read_dollar(struct parser *p, bool in_dquote, pdk_buf *word, unsigned *flags)
{
    const char *s = p->s;
    size_t start = p->pos;
    size_t i = start + 1;
    char c = s[i];
    if (c == '\\' && s[i + 1] == '\n')
        return fail(p, "line continuation inside an expansion");
    if (c == '(') {
        if (s[i + 1] == '\\' && s[i + 2] == '\n')
            return fail(p, "line continuation inside an expansion");
        if (s[i + 1] == '(') {
            p->pos = i + 2;
            *flags |= W_ARITH;
            return read_arithmetic(p, start, word);
        }
        p->pos = i + 1;
        *flags |= W_CMDSUBST;
        return read_command_substitution(p, start, word);
    }
    if (c == '{') {
        p->pos = i + 1;
        *flags |= W_PARAM;
        return read_braced_param(p, start, word, in_dquote, flags);
    }
    if (c == '[')
        return fail(p, "shell-dependent expansion $[");
    if (!in_dquote && c == '\'' && p->st->bash) {
        *flags |= W_QUOTED;
        return read_ansi_c(p, word);
    }
    if (!in_dquote && (c == '\'' || c == '"'))
        return fail(p, "shell-dependent quoting $' or $\"");
    if (is_name_start(c)) {
        while (is_name_char(s[i]))
            i++;
    } else if (is_digit(c) || c == '@' || c == '*' || c == '#' || c == '?' || c == '$' ||
               c == '!' || c == '-') {
        i++;
    } else {
        /* A lone $ is literal. */
        append_char(word, '$');
        p->pos = i;
        return true;
    }
    *flags |= W_PARAM;
    pdk_buf_append(word, s + start, i - start);
    p->pos = i;
    return true;
}

/* Whether word (read so far, with flags) is NAME= or NAME+= followed by '(': bash's array
 * assignment. */
static bool array_start(const struct parser *p, const pdk_buf *word, unsigned flags)
{
    if (!p->st->bash || flags != 0 || word->len < 2 || word->data[word->len - 1] != '=')
        return false;
    size_t n = word->len - 1;
    if (word->data[n - 1] == '+')
        n--;
    if (n == 0 || !is_name_start(word->data[0]))
        return false;
    for (size_t i = 1; i < n; i++)
        if (!is_name_char(word->data[i]))
            return false;
    return true;
}

/* ( words... ) of an array assignment: pos is at the '('. Its words are read (their
 * substitutions listed) and the whole appended verbatim. */
static bool read_array(struct parser *p, pdk_buf *word, unsigned *flags)
{
    const char *s = p->s;
    size_t start = p->pos;
    p->pos++;
    p->nest++;
    bool ok = false;
    for (;;) {
        char c = s[p->pos];
        if (c == ' ' || c == '\t') {
            p->pos++;
            continue;
        }
        if (c == '\\' && s[p->pos + 1] == '\n') {
            p->pos += 2;
            continue;
        }
        if (c == '\n') {
            if (!check_line_break(p, p->pos, p->pos + 1))
                break;
            p->pos++;
            continue;
        }
        if (c == '#') {
            while (s[p->pos] && s[p->pos] != '\n')
                p->pos++;
            continue;
        }
        if (c == ')') {
            p->pos++;
            ok = true;
            break;
        }
        if (c == '\0') {
            fail(p, "unterminated array");
            break;
        }
        size_t n;
        if (is_meta(c) && !((c == '<' || c == '>') && char_at(s, p->pos + 1, &n) == '(')) {
            fail(p, "unexpected token in an array");
            break;
        }
        struct token element = {0};
        bool read = read_word(p, &element);
        *flags |= element.flags & W_EXPANDS;
        token_clear(&element);
        if (!read)
            break;
    }
    p->nest--;
    if (!ok)
        return false;
    pdk_buf_append(word, s + start, p->pos - start);
    return true;
}

/* Read a word starting at pos (not a metacharacter, or a process substitution). */
static bool read_word(struct parser *p, struct token *t)
{
    const char *s = p->s;
    pdk_buf word = {0};
    unsigned flags = 0;
    /* Index in word of the first '=' when everything before it is unquoted literal text. */
    size_t eq = 0;
    bool literal_prefix = true;
    bool first = true;

    while (!failed(p)) {
        size_t i = p->pos, n;
        char c = s[i];
        if (c == '\\' && s[i + 1] == '\n') {
            p->pos += 2;
            continue;
        }
        if ((c == '<' || c == '>') && char_at(s, i + 1, &n) == '(') {
            /* <( ) and >( ): commands, and a word (a /dev/fd path) with what is around */
            literal_prefix = false;
            flags |= W_PROCSUBST;
            p->pos = n;
            if (!read_command_substitution(p, i, &word))
                break;
            first = false;
            continue;
        }
        if (c == '(' && array_start(p, &word, flags)) {
            flags |= W_ARRAY;
            read_array(p, &word, &flags);
            break; /* the array ends the word */
        }
        if (is_meta(c))
            break;
        if (c == '\\') {
            if (s[i + 1] == '\0') {
                fail(p, "backslash at end of script");
                break;
            }
            flags |= W_QUOTED;
            literal_prefix = false;
            append_char(&word, s[i + 1]);
            p->pos += 2;
        } else if (c == '\'') {
            const char *end = strchr(s + i + 1, '\'');
            if (!end) {
                fail(p, "unterminated single quote");
                break;
            }
            if (!check_line_break(p, i, (size_t)(end - s)))
                break;
            flags |= W_QUOTED;
            literal_prefix = false;
            pdk_buf_append(&word, s + i + 1, (size_t)(end - (s + i + 1)));
            p->pos = (size_t)(end - s) + 1;
        } else if (c == '"') {
            flags |= W_QUOTED;
            literal_prefix = false;
            p->pos++;
            if (!read_dquoted(p, &word, &flags))
                break;
        } else if (c == '$') {
            literal_prefix = false;
            read_dollar(p, false, &word, &flags);
        } else if (c == '`') {
            literal_prefix = false;
            p->pos++;
            flags |= W_CMDSUBST;
            read_backquote(p, false, i, &word);
        } else {
            if (c == '*' || c == '?' || c == '[')
                flags |= W_GLOB;
            if (c == '{' || c == '}')
                flags |= W_BRACE;
            if (first && (c == '~' || c == '='))
                flags |= W_LEADING;
            if (c == '=' && literal_prefix && eq == 0)
                eq = word.len;
            append_char(&word, c);
            p->pos++;
        }
        first = false;
    }
    if (failed(p)) {
        pdk_buf_free(&word);
        return false;
    }
    t->kind = T_WORD;
    t->text = pdk_buf_steal(&word);
    if (strstr(t->text, "BASH_ALIASES")) {
        /* an alias defined by assigning it, or read into it */
        fail(p, "an alias defined through BASH_ALIASES");
        token_clear(t);
        return false;
    }
    if (eq > 0) {
        const char *w = t->text;
        size_t n = 0;
        if (is_name_start(w[0]))
            while (is_name_char(w[n]))
                n++;
        if (n > 0 && n == eq)
            flags |= W_ASSIGN;
        else if (n > 0 && (w[n] == '[' || (w[n] == '+' && n + 1 == eq)))
            flags |= W_BASH_ASSIGN;
    }
    t->flags = flags;
    return true;
}

/* ---- here-documents ---- */

static void heredocs_free(struct parser *p)
{
    for (size_t i = 0; i < p->nheredocs; i++)
        free(p->heredocs[i].delimiter);
    free(p->heredocs);
    p->heredocs = NULL;
    p->nheredocs = 0;
}

/* The substitutions of an unquoted here-document's body, read as in double quotes (where
 * a double quote is an ordinary character). */
static void scan_heredoc_body(struct parser *p, const char *body)
{
    struct parser sub = {.s = body, .depth = p->depth + 1, .st = p->st};
    pdk_buf scratch = {0};
    unsigned flags = 0;
    while (!failed(&sub) && body[sub.pos]) {
        char c = body[sub.pos];
        if (c == '\\') {
            char n = body[sub.pos + 1];
            sub.pos += n == '$' || n == '`' || n == '\\' || n == '\n' ? 2 : 1;
        } else if (c == '$') {
            read_dollar(&sub, true, &scratch, &flags);
        } else if (c == '`') {
            size_t start = sub.pos++;
            read_backquote(&sub, false, start, &scratch);
        } else {
            sub.pos++;
        }
    }
    if (sub.have_peek)
        token_clear(&sub.peek);
    if (sub.nheredocs > 0)
        fail(p, "unterminated here-document");
    heredocs_free(&sub);
    pdk_buf_free(&scratch);
}

/* At pos, after a newline: the bodies of the here-documents of the line that ended. A line
 * that only begins with the delimiter, and an unquoted body's line continued with a
 * backslash, are refused: the shell's reading of them is not sure enough. */
static bool read_heredoc_bodies(struct parser *p)
{
    const char *s = p->s;
    bool ok = true;
    for (size_t h = 0; h < p->nheredocs && ok; h++) {
        struct heredoc *d = &p->heredocs[h];
        if (d->nest != p->nest) {
            ok = fail(p, "a here-document inside a substitution that spans lines");
            break;
        }
        size_t dlen = strlen(d->delimiter);
        pdk_buf body = {0};
        for (;;) {
            if (s[p->pos] == '\0') {
                ok = fail(p, "unterminated here-document");
                break;
            }
            const char *line = s + p->pos;
            const char *eol = strchr(line, '\n');
            size_t len = eol ? (size_t)(eol - line) : strlen(line);
            const char *content = line;
            if (d->strip_tabs)
                while (content < line + len && *content == '\t')
                    content++;
            size_t clen = len - (size_t)(content - line);
            p->pos += len + (eol ? 1 : 0);
            if (clen == dlen && memcmp(content, d->delimiter, dlen) == 0)
                break;
            if (dlen > 0 && clen > dlen && memcmp(content, d->delimiter, dlen) == 0) {
                ok = fail(p, "a here-document line that begins with its delimiter");
                break;
            }
            if (!d->quoted && clen > 0 && content[clen - 1] == '\\') {
                ok = fail(p, "a here-document line continued with a backslash");
                break;
            }
            pdk_buf_append(&body, content, clen);
            append_char(&body, '\n');
        }
        if (ok && !d->quoted && body.data)
            scan_heredoc_body(p, body.data);
        pdk_buf_free(&body);
        ok = ok && !failed(p);
    }
    heredocs_free(p);
    return ok;
}

/* ---- the lexer ---- */

/* Lex the next token into *t. */
static void lex(struct parser *p, struct token *t)
{
    const char *s = p->s;
    memset(t, 0, sizeof(*t));
    for (;;) {
        char c = s[p->pos];
        if (c == ' ' || c == '\t') {
            p->pos++;
        } else if (c == '\\' && s[p->pos + 1] == '\n') {
            p->pos += 2;
        } else if (c == '#') {
            while (s[p->pos] && s[p->pos] != '\n')
                p->pos++;
        } else {
            break;
        }
    }
    size_t start = p->pos, i = start, n;
    char c = s[i];
    /* fd digits of a redirection: 2>file, 10<&0 */
    if (is_digit(c)) {
        size_t j = i;
        while (is_digit(s[j]))
            j++;
        if (s[j] == '<' || s[j] == '>')
            i = j, c = s[i];
    }
    switch (c) {
    case '\0':
        if (p->nheredocs > 0) {
            fail(p, "unterminated here-document");
            t->kind = T_ERROR;
            return;
        }
        t->kind = T_EOF;
        return;
    case '\n':
        p->pos = i + 1;
        t->kind = T_NEWLINE;
        if (p->nheredocs > 0 && !read_heredoc_bodies(p))
            t->kind = T_ERROR;
        return;
    case ';': {
        char d = char_at(s, i + 1, &n);
        size_t m;
        if (d == ';' && char_at(s, n, &m) == '&') {
            p->pos = m;
            t->kind = T_DSEMI_AMP;
        } else if (d == ';') {
            p->pos = n;
            t->kind = T_DSEMI;
        } else if (d == '&') {
            p->pos = n;
            t->kind = T_SEMI_AMP;
        } else {
            p->pos = i + 1;
            t->kind = T_SEMI;
        }
        return;
    }
    case '&': {
        char d = char_at(s, i + 1, &n);
        if (d == '&') {
            p->pos = n;
            t->kind = T_AND;
        } else if (d == '>') {
            /* &> and &>> */
            size_t m;
            p->pos = char_at(s, n, &m) == '>' ? m : n;
            t->kind = T_REDIR;
            t->output = true;
        } else {
            p->pos = i + 1;
            t->kind = T_AMP;
        }
        return;
    }
    case '|': {
        char d = char_at(s, i + 1, &n);
        if (d == '|') {
            p->pos = n;
            t->kind = T_OR;
        } else if (d == '&') {
            p->pos = n;
            t->kind = T_PIPE_AMP;
        } else {
            p->pos = i + 1;
            t->kind = T_PIPE;
        }
        return;
    }
    case '(': {
        char d = char_at(s, i + 1, &n);
        if (d == '(') {
            p->pos = n;
            t->kind = T_DLPAREN;
        } else {
            p->pos = i + 1;
            t->kind = T_LPAREN;
        }
        return;
    }
    case ')':
        p->pos = i + 1;
        t->kind = T_RPAREN;
        return;
    case '<':
    case '>': {
        size_t m;
        char d = char_at(s, i + 1, &n);
        if (d == '(')
            break; /* a process substitution: a word (with the digits before it) */
        t->kind = T_REDIR;
        if (c == '<' && d == '<') {
            char e = char_at(s, n, &m);
            if (e == '<') {
                p->pos = m; /* <<< here-string */
            } else {
                p->pos = e == '-' ? m : n;
                t->heredoc = true;
                t->strip_tabs = e == '-';
            }
        } else if (d == '&' || d == '>' || (c == '<' && d == '>') || (c == '>' && d == '|')) {
            p->pos = n;
            t->output = c == '>' || d == '>';
        } else {
            t->output = c == '>';
            p->pos = i + 1;
            /* A bare < or > (no fd digits) is also a comparison inside [[ ]]. */
            t->dup = i == start;
            t->op = c;
        }
        return;
    }
    default:
        break;
    }
    read_word(p, t);
    if (failed(p)) {
        token_clear(t);
        t->kind = T_ERROR;
    }
}

static struct token *peek(struct parser *p)
{
    if (!p->have_peek) {
        struct token t;
        lex(p, &t);
        if (p->have_peek) /* left by a failed substitution inside the word */
            token_clear(&p->peek);
        p->peek = t;
        p->have_peek = true;
    }
    return &p->peek;
}

static void consume(struct parser *p)
{
    token_clear(&p->peek);
    p->have_peek = false;
}

/* A plain (unquoted, unexpanded) word equal to w. */
static bool is_plain_word(const struct token *t, const char *w)
{
    return t->kind == T_WORD && !(t->flags & ~(unsigned)(W_GLOB | W_BRACE)) &&
           strcmp(t->text, w) == 0;
}

static bool is_closer(const struct token *t)
{
    static const char *const closers[] = {"then", "elif", "else", "fi", "do", "done", "}", "esac"};
    if (t->kind != T_WORD)
        return false;
    for (size_t i = 0; i < PDK_ARRAY_SIZE(closers); i++)
        if (is_plain_word(t, closers[i]))
            return true;
    return false;
}

/* The end of a case item's list. */
static bool is_case_end(const struct token *t)
{
    return t->kind == T_DSEMI || t->kind == T_SEMI_AMP || t->kind == T_DSEMI_AMP;
}

static const char *token_name(const struct token *t)
{
    switch (t->kind) {
    case T_WORD:
        return t->text;
    case T_DSEMI:
        return ";;";
    case T_SEMI_AMP:
        return ";&";
    case T_DSEMI_AMP:
        return ";;&";
    case T_EOF:
    case T_NEWLINE:
    case T_SEMI:
    case T_AMP:
    case T_AND:
    case T_OR:
    case T_PIPE:
    case T_PIPE_AMP:
    case T_LPAREN:
    case T_DLPAREN:
    case T_RPAREN:
    case T_REDIR:
    case T_ERROR:
    default:
        return "token";
    }
}

static void skip_newlines(struct parser *p)
{
    while (!failed(p) && peek(p)->kind == T_NEWLINE)
        consume(p);
}

/* ---- simple commands: what names what runs, and what runs other text ---- */

enum command_word {
    WORD_FAILED,    /* the reason is set */
    WORD_LOOKUP,    /* `command -v NAME`: nothing runs; listed whole */
    WORD_COMMAND,   /* argv[*at] names what runs */
    WORD_ARGUMENTS, /* "$@" inside a function: its callers' arguments run */
};

/* "$@" (and its forms ${@}, ${1+"$@"}) as a whole word. */
static bool is_all_arguments(const char *w, unsigned flags)
{
    if (!(flags & W_PARAM) || (flags & (W_EXPANDS & ~W_PARAM)))
        return false;
    return strcmp(w, "$@") == 0 || strcmp(w, "${@}") == 0 || strcmp(w, "${1+\"$@\"}") == 0 ||
           strcmp(w, "${1+$@}") == 0;
}

/* "$@" in command position in the body of the function being defined: it runs its
 * arguments. Refused when a command of its name was listed before (a call the loop or the
 * caller made before this definition, whose arguments would then run unlisted). */
static bool mark_runs_arguments(struct parser *p)
{
    struct state *st = p->st;
    struct function_def *f = &st->functions[st->defining];
    if (f->runs_arguments)
        return true;
    if (name_listed(st, f->name))
        return fail(p, "a function that runs its arguments, called before it is defined");
    if (strcmp(f->name, "command_not_found_handle") == 0) /* called with any missing command */
        return fail(p, "a command_not_found_handle that runs its arguments");
    f->runs_arguments = true;
    return true;
}

/* The word that names the command: argv[0], or the word after command/builtin. Reject what
 * cannot be judged from its text. */
static enum command_word command_word(struct parser *p, char *const *argv, const unsigned *flags,
                                      size_t *at)
{
    size_t i = 0;
    for (;;) {
        unsigned f = flags[i];
        const char *w = argv[i];
        if (is_all_arguments(w, f)) {
            if (p->st->defining < 0) {
                fail(p, "variable in command position");
                return WORD_FAILED;
            }
            return mark_runs_arguments(p) ? WORD_ARGUMENTS : WORD_FAILED;
        }
        const char *why = NULL;
        if (f & W_PROCSUBST)
            why = "process substitution in command position";
        else if (f & W_CMDSUBST)
            why = "command substitution in command position";
        else if (f & W_PARAM)
            why = "variable in command position";
        else if (f & W_ARITH)
            why = "arithmetic in command position";
        else if (f & W_ARRAY)
            why = "array in command position";
        else if ((f & W_GLOB) && strcmp(w, "[") != 0 && strcmp(w, "[[") != 0)
            why = "glob in command position";
        else if (f & W_BRACE)
            why = "brace in command position";
        else if (f & W_LEADING)
            why = "tilde or = expansion in command position";
        else if (w[0] == '\0')
            why = "empty command name";
        if (why) {
            fail(p, why);
            return WORD_FAILED;
        }
        /* Commands that run what paddock cannot see: a loaded builtin, a coprocess, the
         * history. */
        static const char *const evaluators[] = {"coproc", "enable", "fc"};
        for (size_t e = 0; e < PDK_ARRAY_SIZE(evaluators); e++)
            if (strcmp(w, evaluators[e]) == 0) {
                fail_take(p, xasprintf("%s as the command", w));
                return WORD_FAILED;
            }
        if (strcmp(w, "command") != 0 && strcmp(w, "builtin") != 0) {
            *at = i;
            return WORD_COMMAND;
        }
        /* command [-pvV] [--] NAME, builtin NAME: NAME is what runs. */
        i++;
        while (argv[i] && argv[i][0] == '-') {
            if (strcmp(argv[i], "--") == 0) {
                i++;
                break;
            }
            if (strchr(argv[i], 'v') || strchr(argv[i], 'V')) {
                *at = 0;
                return WORD_LOOKUP; /* a lookup: nothing runs */
            }
            if (flags[i] & (W_CMDSUBST | W_PARAM)) {
                fail(p, "variable in command position");
                return WORD_FAILED;
            }
            i++;
        }
        if (!argv[i]) {
            *at = 0;
            return WORD_LOOKUP; /* `command` alone runs nothing */
        }
    }
}

/* Whether every word is literal text: what the shell makes of it is what paddock reads. */
static bool all_literal(char *const *words, const unsigned *flags)
{
    for (size_t i = 0; words[i]; i++)
        if (flags[i] & W_EXPANDS)
            return false;
    return true;
}

/* Parse text (that a command runs) with the state of the script. */
static bool parse_more(struct parser *p, const char *text)
{
    struct state *st = p->st;
    st->reparsed_bytes += strlen(text);
    if (st->reparsed_bytes > MAX_REPARSED_BYTES)
        return fail(p, "too much text to expand");
    parse_script_text(p, text);
    return !failed(p);
}

static bool run_simple(struct parser *p, char *const *argv, const unsigned *flags,
                       char *const *assignments);

/* eval WORDS: the words joined by spaces, parsed as a script (literal words only). */
static bool run_eval(struct parser *p, char *const *args, const unsigned *flags)
{
    if (args[0] && strcmp(args[0], "--") == 0)
        args++, flags++;
    if (!all_literal(args, flags))
        return fail(p, "eval of a variable or a substitution");
    pdk_buf text = {0};
    for (size_t i = 0; args[i]; i++) {
        if (i)
            append_char(&text, ' ');
        pdk_buf_puts(&text, args[i]);
    }
    bool ok = !text.data || parse_more(p, text.data);
    pdk_buf_free(&text);
    return ok;
}

/* . FILE, source FILE: the file's text, as the process that runs the script would read it.
 * home_changed: whether HOME may have changed before this command. */
static bool run_source(struct parser *p, char *const *args, const unsigned *flags,
                       bool home_changed)
{
    struct state *st = p->st;
    const pdk_shell_options *o = st->options;
    if (args[0] && strcmp(args[0], "--") == 0)
        args++, flags++;
    if (!args[0])
        return true; /* the shell refuses it: nothing runs */
    const char *w = args[0];
    unsigned f = flags[0];
    _cleanup_free_ char *path = NULL;
    const char *rest = NULL; /* after a leading $HOME or ~ */
    if (!(f & W_EXPANDS) && w[0] == '/') {
        path = xstrdup(w);
    } else if ((f & W_EXPANDS) == W_LEADING && pdk_str_has_prefix(w, "~/")) {
        rest = w + 1;
    } else if ((f & W_EXPANDS) == W_PARAM && pdk_str_has_prefix(w, "$HOME/")) {
        rest = w + 5;
    } else if ((f & W_EXPANDS) == W_PARAM && pdk_str_has_prefix(w, "${HOME}/")) {
        rest = w + 7;
    } else {
        return fail(p, "a sourced file named by a variable or a relative path");
    }
    if (rest) {
        if (strchr(rest, '$') || strchr(rest, '`'))
            return fail(p, "a sourced file named by a variable or a relative path");
        if (!o || !o->home || o->home[0] != '/')
            return fail(p, "a sourced file under $HOME, which paddock does not know");
        if (home_changed)
            return fail(p, "a sourced file under $HOME, which the script may have changed");
        path = xasprintf("%s%s", o->home, rest);
    }
    if (!o || !o->read_file)
        return fail(p, "a sourced file paddock cannot read");
    if (st->source_depth >= MAX_SOURCE_DEPTH)
        return fail(p, "sourced files nested too deep");
    char *text = NULL;
    if (o->read_file(o->read_file_arg, path, &text) < 0)
        return fail(p, "a sourced file paddock cannot read");
    if (!text)
        return true; /* no such file: the shell's source fails, nothing of it runs */
    pdk_strv_push(&st->sourced, path);
    st->sourced_bytes += strlen(text);
    bool ok;
    if (st->sourced_bytes > MAX_SOURCED_BYTES) {
        ok = fail(p, "sourced files too large");
    } else {
        /* Given arguments of its own, the file's "$@" is them, not a function's. */
        ssize_t defining = st->defining;
        if (args[1])
            st->defining = -1;
        st->source_depth++;
        parse_script_text(p, text);
        st->source_depth--;
        st->defining = defining;
        ok = !failed(p);
    }
    free(text);
    return ok;
}

/* exec [-cl] [-a NAME] [COMMAND...]: COMMAND runs (also as NAME). */
static bool run_exec(struct parser *p, char *const *args, const unsigned *flags)
{
    const char *name = NULL;
    size_t i = 0;
    for (; args[i] && args[i][0] == '-'; i++) {
        if (strcmp(args[i], "--") == 0) {
            i++;
            break;
        }
        if (flags[i] & W_EXPANDS)
            return fail(p, "exec with options paddock cannot read");
        for (const char *c = args[i] + 1; *c; c++) {
            if (*c == 'c' || *c == 'l')
                continue;
            if (*c != 'a')
                return fail(p, "exec with options paddock cannot read");
            if (c[1]) {
                name = c + 1;
            } else {
                if (!args[i + 1] || (flags[i + 1] & W_EXPANDS))
                    return fail(p, "exec with options paddock cannot read");
                name = args[++i];
            }
            break;
        }
    }
    if (!args[i])
        return true; /* redirections of the shell itself */
    if (!run_simple(p, args + i, flags + i, NULL))
        return false;
    if (name && name[0]) {
        char **named = pdk_strv_copy(args + i);
        free(named[0]);
        named[0] = xstrdup(name);
        list_command(p, named, NULL);
        pdk_strv_free(named);
    }
    return true;
}

/* trap [ACTION] SIGNAL...: a literal action is a script the shell runs later. */
static bool run_trap(struct parser *p, char *const *args, const unsigned *flags)
{
    if (args[0] && strcmp(args[0], "--") == 0)
        args++, flags++;
    if (!args[0] || !args[1] || args[0][0] == '-')
        return true; /* a listing, a reset: nothing runs */
    bool number = true;
    for (const char *c = args[0]; *c && number; c++)
        number = is_digit(*c);
    if (number && args[0][0])
        return true; /* an unsigned number: reset */
    if (flags[0] & W_EXPANDS)
        return fail(p, "trap with an action paddock cannot read");
    /* The action runs later, wherever the shell is then: its "$@" is not a function's. */
    struct state *st = p->st;
    ssize_t defining = st->defining;
    st->defining = -1;
    bool ok = !args[0][0] || parse_more(p, args[0]);
    st->defining = defining;
    return ok;
}

static bool is_reserved_word(const char *w)
{
    static const char *const words[] = {"if",   "then", "else",   "elif",     "fi",     "do",
                                        "done", "case", "esac",   "while",    "until",  "for",
                                        "in",   "time", "select", "function", "coproc", "{",
                                        "}",    "!",    "[[",     "]]",       NULL};
    return is_one_of(w, words);
}

/* alias NAME=VALUE...: what later commands named NAME stand for. */
static bool define_aliases(struct parser *p, char *const *args, const unsigned *flags)
{
    struct state *st = p->st;
    for (size_t i = 0; args[i]; i++) {
        const char *eqs = strchr(args[i], '=');
        if (!eqs || args[i] == eqs)
            continue; /* -p, --, a name alone: printed, nothing defined */
        if (flags[i] & W_EXPANDS)
            return fail(p, "alias with a value paddock cannot read");
        _cleanup_free_ char *name = xstrndup(args[i], (size_t)(eqs - args[i]));
        if (is_reserved_word(name))
            return fail(p, "alias of a reserved word");
        if (name_listed(st, name))
            return fail(p, "alias defined after a command of its name");
        struct alias_def *a = find_alias(st, name);
        if (!a) {
            st->aliases = xrealloc(st->aliases, (st->naliases + 1) * sizeof(*st->aliases));
            a = &st->aliases[st->naliases++];
            *a = (struct alias_def){.name = steal_pointer(&name)};
        }
        free(a->value);
        a->value = xstrdup(eqs + 1);
    }
    return true;
}

/* A word as a single-quoted shell word. */
static void append_quoted(pdk_buf *b, const char *w)
{
    append_char(b, '\'');
    for (; *w; w++) {
        if (*w == '\'')
            pdk_buf_puts(b, "'\\''");
        else
            append_char(b, *w);
    }
    append_char(b, '\'');
}

/* argv[0] is an alias: what it stands for with the rest of the words, parsed (the command
 * itself is listed too, for a shell that does not expand aliases). */
static bool expand_alias(struct parser *p, char *const *argv, const unsigned *flags)
{
    struct state *st = p->st;
    if (flags[0] != 0)
        return true; /* quoted or expanded: not an alias */
    struct alias_def *a = find_alias(st, argv[0]);
    if (!a || a->expanding)
        return true;
    size_t index = (size_t)(a - st->aliases);
    pdk_buf text = {0};
    pdk_buf_puts(&text, a->value);
    /* A value ending in a blank makes the next word an alias too (and so on). */
    size_t i = 1;
    for (const char *v = a->value; argv[i];) {
        size_t vlen = strlen(v);
        if (vlen == 0 || (v[vlen - 1] != ' ' && v[vlen - 1] != '\t') || flags[i] != 0)
            break;
        const struct alias_def *next = find_alias(st, argv[i]);
        if (!next || next->expanding)
            break;
        append_char(&text, ' ');
        pdk_buf_puts(&text, next->value);
        v = next->value;
        i++;
    }
    for (; argv[i]; i++) {
        append_char(&text, ' ');
        append_quoted(&text, argv[i]);
    }
    st->aliases[index].expanding = true;
    bool ok = parse_more(p, text.data ? text.data : "");
    st->aliases[index].expanding = false;
    pdk_buf_free(&text);
    return ok;
}

/* Commands whose arguments are assignments (and PS4, which set -x expands before every
 * command, is an assignment there too). */
static bool is_declaration(const char *name)
{
    static const char *const names[] = {"export", "readonly", "declare", "typeset", "local", NULL};
    return is_one_of(name, names);
}

/* PS4 is expanded, substitutions included, before each command `set -x` traces: one set to
 * a text holding a substitution runs it unlisted. */
static bool check_assignment(struct parser *p, const char *word)
{
    if ((pdk_str_has_prefix(word, "PS4=") || pdk_str_has_prefix(word, "PS4+=")) &&
        (strstr(word, "$(") || strchr(word, '`')))
        return fail(p, "PS4 with a substitution");
    return true;
}

/* Builtins that take variable names, whose subscripts (a[$(cmd)]) bash evaluates. */
static bool takes_names(const char *name)
{
    static const char *const names[] = {
        "unset",   "declare",   "typeset", "local", "export", "readonly", "read", "printf",
        "mapfile", "readarray", "getopts", "test",  "[",      "[[",       "wait", NULL};
    return is_one_of(name, names);
}

/* Arguments the command evaluates as code: let's (arithmetic, whose subscripts may hold
 * substitutions), mapfile's -C callback, a subscript of a name. */
static bool check_evaluated_arguments(struct parser *p, char *const *argv)
{
    const char *name = argv[0];
    if (takes_names(name))
        for (size_t i = 1; argv[i]; i++)
            if (strchr(argv[i], '[') && (strstr(argv[i], "$(") || strchr(argv[i], '`')))
                return fail(p, "a variable name with a substitution in its subscript");
    if (strcmp(name, "let") == 0) {
        for (size_t i = 1; argv[i]; i++)
            if (strstr(argv[i], "$(") || strchr(argv[i], '`'))
                return fail(p, "let with a substitution");
    } else if (strcmp(name, "mapfile") == 0 || strcmp(name, "readarray") == 0) {
        for (size_t i = 1; argv[i]; i++)
            if (argv[i][0] == '-' && strchr(argv[i], 'C'))
                return fail(p, "mapfile with a callback");
    } else if (is_declaration(name)) {
        for (size_t i = 1; argv[i]; i++)
            if (!check_assignment(p, argv[i]))
                return false;
    }
    return true;
}

/* shift and set in the body of the function being defined: which of its arguments "$@"
 * runs changes. */
static bool note_positional_change(struct parser *p, char *const *cmd)
{
    struct state *st = p->st;
    struct function_def *f = &st->functions[st->defining];
    bool sets = false;
    if (strcmp(cmd[0], "set") == 0)
        for (size_t i = 1; cmd[i] && !sets; i++)
            sets = strcmp(cmd[i], "--") == 0 || (cmd[i][0] != '-' && cmd[i][0] != '+');
    bool shifts = strcmp(cmd[0], "shift") == 0;
    if (!sets && !shifts)
        return true;
    if (f->runs_arguments && name_listed(st, f->name))
        return fail(p, "a function that runs its arguments, called before it is defined");
    f->sets |= sets;
    f->shifts |= shifts;
    return true;
}

/* The arguments of a call of function f, which runs them: a command (each of their tails
 * when f shifts them; refused when it sets them, called with arguments or not). */
static bool run_arguments(struct parser *p, size_t f, char *const *args, const unsigned *flags)
{
    if (p->st->functions[f].sets)
        return fail(p, "a function that runs its arguments after setting them");
    for (size_t i = 0; args[i]; i++) {
        if (!run_simple(p, args + i, flags + i, NULL))
            return false;
        if (!p->st->functions[f].shifts) /* (the table may have grown meanwhile) */
            break;
    }
    return true;
}

/* A simple command of words argv (flags[i] for argv[i]), with its assignments (NULL: none):
 * listed, and what it runs followed. */
static bool run_simple(struct parser *p, char *const *argv, const unsigned *flags,
                       char *const *assignments)
{
    struct state *st = p->st;
    if (++p->depth > MAX_DEPTH) {
        p->depth--;
        return fail(p, "nesting too deep");
    }
    bool ok = false;
    size_t at = 0;
    if (!expand_alias(p, argv, flags))
        goto out;
    switch (command_word(p, argv, flags, &at)) {
    case WORD_FAILED:
        goto out;
    case WORD_ARGUMENTS:
        ok = true;
        goto out;
    case WORD_LOOKUP:
        list_command(p, argv, assignments);
        ok = true;
        goto out;
    case WORD_COMMAND:
    default:
        break;
    }
    char *const *cmd = argv + at;
    const unsigned *cmd_flags = flags + at;
    if (!check_evaluated_arguments(p, cmd))
        goto out;
    bool home_changed = st->home_may_change || (assignments && assignments[0]);
    list_command(p, cmd, assignments);
    const char *name = cmd[0];
    if (st->defining >= 0 && !note_positional_change(p, cmd))
        goto out;
    if (strcmp(name, "eval") == 0) {
        ok = run_eval(p, cmd + 1, cmd_flags + 1);
    } else if (strcmp(name, "source") == 0 || strcmp(name, ".") == 0) {
        ok = run_source(p, cmd + 1, cmd_flags + 1, home_changed);
    } else if (strcmp(name, "exec") == 0) {
        ok = run_exec(p, cmd + 1, cmd_flags + 1);
    } else if (strcmp(name, "trap") == 0) {
        ok = run_trap(p, cmd + 1, cmd_flags + 1);
    } else if (strcmp(name, "alias") == 0) {
        ok = define_aliases(p, cmd + 1, cmd_flags + 1);
    } else {
        ssize_t f = find_function(st, name);
        ok = f < 0 || !st->functions[f].runs_arguments ||
             run_arguments(p, (size_t)f, cmd + 1, cmd_flags + 1);
    }
out:
    p->depth--;
    return ok;
}

/* ---- the parser ---- */

/* The redirection in the lookahead and its target, consumed. A here-document's delimiter
 * is noted: its body comes after the line. */
static bool take_redirection(struct parser *p)
{
    struct token *t = peek(p);
    bool heredoc = t->heredoc, strip_tabs = t->strip_tabs, output = t->output;
    consume(p);
    t = peek(p);
    if (failed(p))
        return false;
    if (t->kind != T_WORD)
        return fail(p, "missing redirection target");
    if (heredoc) {
        if ((t->flags & (W_CMDSUBST | W_PARAM | W_ARITH | W_PROCSUBST | W_ARRAY)) ||
            strchr(t->text, '\n'))
            return fail(p, "complex here-document delimiter");
        p->heredocs = xrealloc(p->heredocs, (p->nheredocs + 1) * sizeof(*p->heredocs));
        p->heredocs[p->nheredocs++] = (struct heredoc){.delimiter = xstrdup(t->text),
                                                       .strip_tabs = strip_tabs,
                                                       .quoted = t->flags & W_QUOTED,
                                                       .nest = p->nest};
    }
    if (output && !(t->flags & W_EXPANDS) && t->text[0] && !is_digit(t->text[0]) &&
        strcmp(t->text, "-") != 0)
        pdk_strv_push(&p->st->written, t->text);
    consume(p);
    return true;
}

/* Trailing redirections of a compound command. */
static bool parse_redirections(struct parser *p)
{
    for (;;) {
        struct token *t = peek(p);
        if (failed(p))
            return false;
        if (t->kind != T_REDIR)
            return true;
        if (!take_redirection(p))
            return false;
    }
}

/* [[ ... ]]: the current token is "[[". Its words, operators included, are argv. */
static bool parse_double_bracket(struct parser *p)
{
    char **argv = NULL;
    pdk_strv_push(&argv, "[[");
    consume(p);
    for (;;) {
        struct token *t = peek(p);
        if (failed(p))
            break;
        const char *w = NULL;
        switch (t->kind) {
        case T_WORD:
            w = t->text;
            break;
        case T_AND:
            w = "&&";
            break;
        case T_OR:
            w = "||";
            break;
        case T_LPAREN:
            w = "(";
            break;
        case T_RPAREN:
            w = ")";
            break;
        case T_REDIR:
            if (t->dup)
                w = t->op == '<' ? "<" : ">";
            break;
        case T_EOF:
        case T_NEWLINE:
        case T_SEMI:
        case T_DSEMI:
        case T_SEMI_AMP:
        case T_DSEMI_AMP:
        case T_AMP:
        case T_PIPE:
        case T_PIPE_AMP:
        case T_DLPAREN:
        case T_ERROR:
        default:
            break;
        }
        if (!w) {
            fail(p, t->kind == T_EOF ? "unterminated [[" : "unexpected token in [[ ]]");
            break;
        }
        bool end = is_plain_word(t, "]]");
        pdk_strv_push(&argv, w);
        consume(p);
        if (end) {
            if (!parse_redirections(p) || !check_evaluated_arguments(p, argv))
                break;
            list_command(p, argv, NULL);
            pdk_strv_free(argv);
            return true;
        }
    }
    pdk_strv_free(argv);
    return false;
}

static bool parse_function_body(struct parser *p, const char *name);

static bool parse_simple(struct parser *p)
{
    struct state *st = p->st;
    char **argv = NULL;
    char **assignments = NULL;
    unsigned *flags = NULL;
    size_t argc = 0;
    bool redirected = false;
    bool ok = false;

    for (;;) {
        struct token *t = peek(p);
        if (failed(p))
            goto out;
        if (t->kind == T_REDIR) {
            if (!take_redirection(p))
                goto out;
            redirected = true;
            continue;
        }
        if (t->kind == T_LPAREN && argc == 1 && !assignments && !redirected && flags[0] == 0 &&
            !strchr(argv[0], '=')) {
            /* NAME ( ) BODY */
            consume(p);
            t = peek(p);
            if (failed(p))
                goto out;
            if (t->kind != T_RPAREN) {
                fail(p, "function definition");
                goto out;
            }
            consume(p);
            ok = parse_function_body(p, argv[0]);
            goto out;
        }
        if (t->kind == T_LPAREN || t->kind == T_DLPAREN) {
            fail(p, argc == 1 && !assignments ? "function definition" : "unexpected (");
            goto out;
        }
        if (t->kind != T_WORD)
            break;
        if (argc == 0 && ((t->flags & W_ASSIGN) || (st->bash && (t->flags & W_BASH_ASSIGN)))) {
            if (!check_assignment(p, t->text))
                goto out;
            pdk_strv_push_take(&assignments, steal_pointer(&t->text));
            consume(p);
            continue;
        }
        if (argc == 0 && (t->flags & W_BASH_ASSIGN)) {
            fail(p, "array or append assignment");
            goto out;
        }
        flags = xrealloc(flags, (argc + 1) * sizeof(*flags));
        flags[argc++] = t->flags;
        pdk_strv_push_take(&argv, steal_pointer(&t->text));
        consume(p);
    }
    if (assignments)
        st->home_may_change = true;
    ok = argc == 0 || run_simple(p, argv, flags, assignments);
out:
    pdk_strv_free(argv);
    pdk_strv_free(assignments);
    free(flags);
    return ok;
}

/* Expect the plain word w (consumed); otherwise fail with reason. */
static bool expect_word(struct parser *p, const char *w, const char *reason)
{
    struct token *t = peek(p);
    if (failed(p))
        return false;
    if (!is_plain_word(t, w))
        return fail(p, reason);
    consume(p);
    return true;
}

/* A list that must hold at least one command, ended by the plain word closer. */
static bool parse_body(struct parser *p, const char *reason)
{
    size_t n;
    if (!parse_list(p, &n))
        return false;
    if (n == 0)
        return fail(p, reason);
    return true;
}

static bool parse_if(struct parser *p)
{
    consume(p); /* if */
    for (;;) {
        if (!parse_body(p, "empty if condition") || !expect_word(p, "then", "unterminated if") ||
            !parse_body(p, "empty then branch"))
            return false;
        struct token *t = peek(p);
        if (failed(p))
            return false;
        if (is_plain_word(t, "elif")) {
            consume(p);
            continue;
        }
        if (is_plain_word(t, "else")) {
            consume(p);
            if (!parse_body(p, "empty else branch"))
                return false;
        }
        return expect_word(p, "fi", "unterminated if") && parse_redirections(p);
    }
}

static bool parse_while(struct parser *p)
{
    consume(p); /* while, until */
    return parse_body(p, "empty loop condition") && expect_word(p, "do", "unterminated loop") &&
           parse_body(p, "empty loop body") && expect_word(p, "done", "unterminated loop") &&
           parse_redirections(p);
}

static bool parse_for(struct parser *p)
{
    consume(p); /* for */
    struct token *t = peek(p);
    if (failed(p))
        return false;
    if (t->kind == T_DLPAREN)
        return fail(p, "arithmetic for loop");
    if (t->kind != T_WORD || t->flags != 0 || !is_name_start(t->text[0]))
        return fail(p, "bad for loop variable");
    for (const char *c = t->text; *c; c++)
        if (!is_name_char(*c))
            return fail(p, "bad for loop variable");
    consume(p);
    skip_newlines(p);
    t = peek(p);
    if (failed(p))
        return false;
    if (is_plain_word(t, "in")) {
        consume(p);
        /* The word list: not a command, but its substitutions were listed when read. */
        for (;;) {
            t = peek(p);
            if (failed(p))
                return false;
            if (t->kind != T_WORD)
                break;
            consume(p);
        }
        if (t->kind != T_SEMI && t->kind != T_NEWLINE)
            return fail(p, "bad for loop word list");
        consume(p);
    } else if (t->kind == T_SEMI) {
        consume(p);
    }
    skip_newlines(p);
    return expect_word(p, "do", "unterminated for loop") && parse_body(p, "empty loop body") &&
           expect_word(p, "done", "unterminated for loop") && parse_redirections(p);
}

/* case WORD in [(]PATTERN[|PATTERN...]) LIST ;; ... esac: the patterns are words (their
 * substitutions listed when read), each item's list is commands. */
static bool parse_case(struct parser *p)
{
    consume(p); /* case */
    struct token *t = peek(p);
    if (failed(p))
        return false;
    if (t->kind != T_WORD)
        return fail(p, "bad case statement");
    consume(p);
    skip_newlines(p);
    if (!expect_word(p, "in", "bad case statement"))
        return false;
    for (;;) {
        skip_newlines(p);
        t = peek(p);
        if (failed(p))
            return false;
        if (is_plain_word(t, "esac")) {
            consume(p);
            return parse_redirections(p);
        }
        if (t->kind == T_LPAREN) {
            consume(p);
            t = peek(p);
            if (failed(p))
                return false;
        }
        for (;;) {
            if (t->kind != T_WORD)
                return fail(p, "bad case pattern");
            consume(p);
            t = peek(p);
            if (failed(p))
                return false;
            if (t->kind == T_RPAREN)
                break;
            if (t->kind != T_PIPE)
                return fail(p, "bad case pattern");
            consume(p);
            t = peek(p);
            if (failed(p))
                return false;
        }
        consume(p); /* ) */
        size_t n;
        if (!parse_list(p, &n))
            return false;
        t = peek(p);
        if (failed(p))
            return false;
        if (is_case_end(t))
            consume(p);
        else if (!is_plain_word(t, "esac"))
            return fail(p, "unterminated case statement");
    }
}

/* (( ... )), bash's arithmetic command: the current token is "((". */
static bool parse_arithmetic_command(struct parser *p)
{
    if (!p->st->bash)
        return fail(p, "arithmetic command");
    consume(p); /* pos is after the (( */
    pdk_buf scratch = {0};
    bool ok = read_arithmetic(p, p->pos, &scratch);
    pdk_buf_free(&scratch);
    return ok && parse_redirections(p);
}

/* Whether t begins a compound command (what a function's body is). */
static bool is_compound_start(const struct token *t)
{
    static const char *const words[] = {"{", "if", "while", "until", "for", "case", "[[", "select"};
    if (t->kind == T_LPAREN || t->kind == T_DLPAREN)
        return true;
    for (size_t i = 0; i < PDK_ARRAY_SIZE(words); i++)
        if (is_plain_word(t, words[i]))
            return true;
    return false;
}

/* The body of the function name (after its "( )"): its commands are listed now, whether it
 * is called or not; "$@" run in it makes its callers' arguments commands. */
static bool parse_function_body(struct parser *p, const char *name)
{
    struct state *st = p->st;
    ssize_t f = find_function(st, name);
    if (f < 0) {
        st->functions = xrealloc(st->functions, (st->nfunctions + 1) * sizeof(*st->functions));
        st->functions[st->nfunctions] = (struct function_def){.name = xstrdup(name)};
        f = (ssize_t)st->nfunctions++;
    }
    skip_newlines(p);
    struct token *t = peek(p);
    if (failed(p))
        return false;
    if (!is_compound_start(t))
        return fail(p, "a function body that is not a compound command");
    ssize_t outer = st->defining;
    st->defining = f;
    bool ok = parse_command(p);
    st->defining = outer;
    return ok;
}

static bool parse_command(struct parser *p)
{
    struct token *t = peek(p);
    if (failed(p))
        return false;
    switch (t->kind) {
    case T_LPAREN: {
        consume(p);
        size_t n;
        if (!parse_list(p, &n))
            return false;
        t = peek(p);
        if (t->kind != T_RPAREN)
            return fail(p, "unbalanced parentheses");
        if (n == 0)
            return fail(p, "empty subshell");
        consume(p);
        return parse_redirections(p);
    }
    case T_DLPAREN:
        return parse_arithmetic_command(p);
    case T_WORD:
        break;
    case T_REDIR:
        return parse_simple(p);
    case T_RPAREN:
        return fail(p, "unbalanced parentheses");
    case T_DSEMI:
    case T_SEMI_AMP:
    case T_DSEMI_AMP:
        return fail_take(p, xasprintf("unexpected '%s'", token_name(t)));
    case T_EOF:
    case T_NEWLINE:
    case T_SEMI:
    case T_AMP:
    case T_AND:
    case T_OR:
    case T_PIPE:
    case T_PIPE_AMP:
    case T_ERROR:
    default:
        return fail(p, "syntax error: missing command");
    }
    if (is_plain_word(t, "{")) {
        consume(p);
        if (!parse_body(p, "empty group"))
            return false;
        return expect_word(p, "}", "unbalanced braces") && parse_redirections(p);
    }
    if (is_plain_word(t, "if"))
        return parse_if(p);
    if (is_plain_word(t, "while") || is_plain_word(t, "until"))
        return parse_while(p);
    if (is_plain_word(t, "for"))
        return parse_for(p);
    if (is_plain_word(t, "[["))
        return parse_double_bracket(p);
    if (is_plain_word(t, "case"))
        return parse_case(p);
    if (is_plain_word(t, "function")) {
        consume(p);
        t = peek(p);
        if (failed(p))
            return false;
        if (t->kind != T_WORD || t->flags != 0 || strchr(t->text, '='))
            return fail(p, "function definition");
        _cleanup_free_ char *name = steal_pointer(&t->text);
        consume(p);
        t = peek(p);
        if (failed(p))
            return false;
        if (t->kind == T_LPAREN) {
            consume(p);
            t = peek(p);
            if (failed(p))
                return false;
            if (t->kind != T_RPAREN)
                return fail(p, "function definition");
            consume(p);
        }
        return parse_function_body(p, name);
    }
    if (is_plain_word(t, "select"))
        return fail(p, "select loop");
    if (is_plain_word(t, "!"))
        return fail(p, "misplaced !");
    if (is_closer(t))
        return fail_take(p, xasprintf("unexpected '%s'", t->text));
    return parse_simple(p);
}

static bool parse_pipeline(struct parser *p)
{
    struct token *t = peek(p);
    if (failed(p))
        return false;
    if (is_plain_word(t, "!")) {
        consume(p);
        t = peek(p);
        if (failed(p))
            return false;
    }
    if (is_plain_word(t, "time")) {
        /* time [-p] PIPELINE: the pipeline runs (timed). */
        consume(p);
        t = peek(p);
        if (!failed(p) && is_plain_word(t, "-p")) {
            consume(p);
            t = peek(p);
        }
        if (failed(p))
            return false;
        if (t->kind == T_WORD && t->text[0] == '-' && !(t->flags & W_QUOTED))
            return fail(p, "time with options paddock does not know");
        if (t->kind != T_WORD && t->kind != T_LPAREN && t->kind != T_DLPAREN && t->kind != T_REDIR)
            return true; /* time alone: the shell's times */
    }
    for (;;) {
        if (!parse_command(p))
            return false;
        t = peek(p);
        if (failed(p))
            return false;
        if (t->kind != T_PIPE && t->kind != T_PIPE_AMP)
            return true;
        consume(p);
        skip_newlines(p);
    }
}

static bool parse_and_or(struct parser *p)
{
    for (;;) {
        if (!parse_pipeline(p))
            return false;
        struct token *t = peek(p);
        if (failed(p))
            return false;
        if (t->kind != T_AND && t->kind != T_OR)
            return true;
        consume(p);
        skip_newlines(p);
    }
}

/* What ends a list, left in the lookahead: the end, ')', a closing reserved word, the end
 * of a case item. */
static bool ends_list(const struct token *t)
{
    return t->kind == T_EOF || t->kind == T_RPAREN || is_closer(t) || is_case_end(t);
}

/* Parse and_or lists until what ends a list. */
static bool parse_list(struct parser *p, size_t *and_or_count)
{
    *and_or_count = 0;
    if (++p->depth > MAX_DEPTH) {
        p->depth--;
        return fail(p, "nesting too deep");
    }
    bool ok = false;
    for (;;) {
        skip_newlines(p);
        struct token *t = peek(p);
        if (failed(p))
            break;
        if (ends_list(t)) {
            ok = true;
            break;
        }
        if (!parse_and_or(p))
            break;
        (*and_or_count)++;
        t = peek(p);
        if (failed(p))
            break;
        if (t->kind == T_SEMI || t->kind == T_AMP || t->kind == T_NEWLINE) {
            consume(p);
            continue;
        }
        if (ends_list(t)) {
            ok = true;
            break;
        }
        fail(p, "syntax error");
        break;
    }
    p->depth--;
    return ok;
}

/* A whole script on text: the top level, and the texts of ` `, eval, trap, aliases and
 * sourced files. */
static void parse_text(struct parser *p)
{
    size_t n;
    if (!parse_list(p, &n))
        return;
    struct token *t = peek(p);
    if (failed(p))
        return;
    if (t->kind == T_RPAREN)
        fail(p, "unbalanced parentheses");
    else if (t->kind != T_EOF)
        fail_take(p, xasprintf("unexpected '%s'", token_name(t)));
    consume(p);
}

static void parse_script_text(struct parser *parent, const char *text)
{
    struct parser sub = {.s = text, .depth = parent->depth + 1, .st = parent->st};
    if (sub.depth > MAX_DEPTH) {
        fail(parent, "nesting too deep");
        return;
    }
    parse_text(&sub);
    if (sub.have_peek)
        token_clear(&sub.peek);
    heredocs_free(&sub);
}

static void free_commands(pdk_shell_command *commands, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        pdk_strv_free(commands[i].argv);
        pdk_strv_free(commands[i].assignments);
    }
    free(commands);
}

void pdk_shell_split_with(const char *script, const pdk_shell_options *options,
                          struct pdk_shell_split *out)
{
    struct state st = {.options = options, .defining = -1};
    st.bash = options && options->shell && strcmp(options->shell, "bash") == 0;
    struct parser p = {.s = script ? script : "", .st = &st};
    parse_text(&p);
    if (p.have_peek)
        token_clear(&p.peek);
    heredocs_free(&p);
    /* A file the script writes (as a redirection names it) and sources ran what it wrote,
     * not what paddock read. */
    for (size_t i = 0; st.sourced && st.sourced[i] && !st.reason; i++)
        for (size_t j = 0; st.written && st.written[j]; j++) {
            const char *w = st.written[j], *path = st.sourced[i];
            size_t wl = strlen(w), pl = strlen(path);
            if (strcmp(w, path) == 0 || (w[0] != '/' && pl > wl && path[pl - wl - 1] == '/' &&
                                         strcmp(path + pl - wl, w) == 0)) {
                fail(&p, "a sourced file the script writes");
                break;
            }
        }
    pdk_strv_free(st.written);
    pdk_strv_free(st.sourced);
    for (size_t i = 0; i < st.nfunctions; i++)
        free(st.functions[i].name);
    free(st.functions);
    for (size_t i = 0; i < st.naliases; i++) {
        free(st.aliases[i].name);
        free(st.aliases[i].value);
    }
    free(st.aliases);
    memset(out, 0, sizeof(*out));
    if (st.reason) {
        free_commands(st.commands, st.count);
        out->reducible = false;
        out->reason = st.reason;
        return;
    }
    out->commands = st.commands;
    out->count = st.count;
    out->reducible = true;
}

void pdk_shell_split(const char *script, struct pdk_shell_split *out)
{
    pdk_shell_split_with(script, NULL, out);
}

void pdk_shell_split_free(struct pdk_shell_split *split)
{
    if (!split)
        return;
    free_commands(split->commands, split->count);
    free(split->reason);
    memset(split, 0, sizeof(*split));
}

/* ---- wrappers ---- */

static const char *basename_of(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash ? slash + 1 : path;
}

static bool is_shell_name(const char *name)
{
    static const char *const shells[] = {"sh", "bash", "dash", "zsh", "ksh", "ash"};
    for (size_t i = 0; i < PDK_ARRAY_SIZE(shells); i++)
        if (strcmp(name, shells[i]) == 0)
            return true;
    return false;
}

const char *pdk_shell_wrapper_name(char *const *argv)
{
    if (!argv || !argv[0])
        return NULL;
    const char *name = basename_of(argv[0]);
    return strcmp(name, "busybox") == 0 ? "sh" : name;
}

const char *pdk_shell_wrapper_script(char *const *argv)
{
    if (!argv || !argv[0])
        return NULL;
    size_t i = 1;
    const char *name = basename_of(argv[0]);
    if (strcmp(name, "busybox") == 0) {
        if (!argv[1] || (strcmp(argv[1], "sh") != 0 && strcmp(argv[1], "ash") != 0))
            return NULL;
        i = 2;
    } else if (!is_shell_name(name)) {
        return NULL;
    }
    bool command_string = false;
    for (; argv[i]; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--") == 0 || strcmp(a, "-") == 0) {
            i++;
            break;
        }
        if (a[0] == '-' && a[1] == '-') {
            /* Long options: the argument-taking ones skip their argument. */
            static const char *const with_arg[] = {"--rcfile", "--init-file"};
            static const char *const flags[] = {"--login",     "--norc",         "--noprofile",
                                                "--posix",     "--noediting",    "--restricted",
                                                "--verbose",   "--dump-strings", "--debugger",
                                                "--protected", "--no-rcs",       "--no-globalrcs"};
            bool known = false;
            for (size_t k = 0; k < PDK_ARRAY_SIZE(with_arg); k++)
                if (strcmp(a, with_arg[k]) == 0) {
                    if (!argv[i + 1])
                        return NULL;
                    i++;
                    known = true;
                }
            for (size_t k = 0; k < PDK_ARRAY_SIZE(flags); k++)
                if (strcmp(a, flags[k]) == 0)
                    known = true;
            if (!known)
                return NULL;
            continue;
        }
        if (a[0] != '-' && a[0] != '+')
            break;
        if (a[1] == '\0')
            return NULL;
        size_t option_args = 0;
        for (const char *c = a + 1; *c; c++) {
            if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z')))
                return NULL;
            if (*c == 's' || *c == 'i')
                return NULL; /* stdin script, interactive shell */
            if (*c == 'c' && a[0] == '-')
                command_string = true;
            if (*c == 'o' || *c == 'O')
                option_args++;
        }
        for (; option_args > 0; option_args--) {
            if (!argv[i + 1])
                return NULL;
            i++;
        }
    }
    if (!command_string || !argv[i])
        return NULL;
    return argv[i];
}
