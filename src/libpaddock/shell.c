/* shell.c: the shell splitter of the command policy (see shell.h).
 *
 * A recursive-descent parser over the script text with a one-token lookahead:
 *
 *   list      := { newline } [ and_or { (; | & | newline) { newline } and_or } ]
 *   and_or    := pipeline { (&& | ||) { newline } pipeline }
 *   pipeline  := [ ! ] command { (| | |&) { newline } command }
 *   command   := ( list ) | { list } | if | while | until | for | [[ ... ]] | simple
 *                (compound commands may be followed by redirections)
 *   simple    := { assignment | redirection } [ word { word | redirection } ]
 *
 * Substitutions are parsed while their word is read: $( ) by the same parser on the same
 * text (up to its ')'), ` ` by a sub-parser on the unescaped inner text. Their commands are
 * listed as they are found, which is before the command that holds the word.
 *
 * The first construct the parser does not reduce records a reason and stops everything;
 * pdk_shell_split() then drops what was listed. Reasons are static strings or xasprintf'd.
 */
#include "shell.h"

#include "util.h"

#include <stdlib.h>
#include <string.h>

/* Nesting bound for ( ), { }, if/while/for bodies and substitutions: keeps the recursion
 * (and the fuzzer's stack) bounded. Real scripts stay far below it. */
#define MAX_DEPTH 64

enum token_kind {
    T_EOF,
    T_WORD,
    T_NEWLINE,
    T_SEMI,     /* ; */
    T_AMP,      /* & */
    T_AND,      /* && */
    T_OR,       /* || */
    T_PIPE,     /* | */
    T_PIPE_AMP, /* |& */
    T_LPAREN,   /* ( */
    T_DLPAREN,  /* (( */
    T_RPAREN,   /* ) */
    T_REDIR,    /* any redirection operator, with its fd digits */
    T_ERROR,    /* the lexer failed; the reason is set */
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

struct token {
    enum token_kind kind;
    char *text; /* T_WORD: the word after quote removal (owned) */
    unsigned flags;
    bool heredoc; /* T_REDIR: << or <<- */
    bool dup;     /* T_REDIR: the operator is < or > alone (a word inside [[ ]]) */
    char op;      /* T_REDIR: '<' or '>' for dup */
};

struct state {
    pdk_shell_command *commands;
    size_t count;
    size_t cap;
    char *reason; /* the first failure */
};

struct parser {
    const char *s;
    size_t pos;
    unsigned depth;
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
static void parse_script_text(struct parser *parent, const char *text);

static void append_char(pdk_buf *b, char c)
{
    pdk_buf_append(b, &c, 1);
}

/* $(( ... )): pos is after "$((". Append it verbatim when it is plain arithmetic. */
static bool read_arithmetic(struct parser *p, size_t start, pdk_buf *word)
{
    const char *s = p->s;
    size_t i = p->pos;
    int depth = 0;
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
    pdk_buf_append(word, s + start, i - start);
    p->pos = i;
    return true;
}

/* ${ ... }: pos is after "${". Only simple forms are kept (verbatim). */
static bool read_braced_param(struct parser *p, size_t start, pdk_buf *word)
{
    const char *s = p->s;
    size_t i = p->pos;
    for (;;) {
        char c = s[i];
        if (c == '\0')
            return fail(p, "unterminated ${");
        if (c == '}')
            break;
        if (c == '$' || c == '`' || c == '\'' || c == '"' || c == '\\' || c == '(' || c == '{' ||
            c == '\n')
            return fail(p, "complex parameter expansion");
        i++;
    }
    i++;
    if (i - start == 3)
        return fail(p, "bad substitution ${}");
    pdk_buf_append(word, s + start, i - start);
    p->pos = i;
    return true;
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
    char *text = pdk_buf_steal(&inner);
    parse_script_text(p, text);
    free(text);
    if (failed(p))
        return false;
    pdk_buf_append(word, s + start, i - start);
    p->pos = i;
    return true;
}

/* $( ... ): pos is after "$(". The same parser reads the commands up to the ')'. */
static bool read_command_substitution(struct parser *p, size_t start, pdk_buf *word)
{
    if (p->have_peek) /* a word is read only with an empty lookahead */
        abort();
    size_t count;
    bool ok = parse_list(p, &count);
    bool closed = ok && p->have_peek && p->peek.kind == T_RPAREN;
    if (p->have_peek) {
        token_clear(&p->peek);
        p->have_peek = false;
    }
    if (!ok)
        return false;
    if (!closed)
        return fail(p, "unterminated command substitution");
    pdk_buf_append(word, p->s + start, p->pos - start);
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
        return read_braced_param(p, start, word);
    }
    if (c == '[')
        return fail(p, "shell-dependent expansion $[");
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

/* Read a word starting at pos (not a metacharacter). */
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
        size_t i = p->pos;
        char c = s[i];
        if (c == '\\' && s[i + 1] == '\n') {
            p->pos += 2;
            continue;
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
            flags |= W_QUOTED;
            literal_prefix = false;
            pdk_buf_append(&word, s + i + 1, (size_t)(end - (s + i + 1)));
            p->pos = (size_t)(end - s) + 1;
        } else if (c == '"') {
            flags |= W_QUOTED;
            literal_prefix = false;
            p->pos++;
            for (;;) {
                size_t j = p->pos;
                char d = s[j];
                if (d == '\0') {
                    fail(p, "unterminated double quote");
                    break;
                }
                if (d == '"') {
                    p->pos++;
                    break;
                }
                if (d == '\\') {
                    char n = s[j + 1];
                    if (n == '\n') {
                        p->pos += 2;
                    } else if (n == '"' || n == '\\' || n == '$' || n == '`') {
                        append_char(&word, n);
                        p->pos += 2;
                    } else {
                        append_char(&word, '\\');
                        p->pos++;
                    }
                } else if (d == '$') {
                    if (!read_dollar(p, true, &word, &flags))
                        break;
                } else if (d == '`') {
                    p->pos++;
                    flags |= W_CMDSUBST;
                    if (!read_backquote(p, true, j, &word))
                        break;
                } else {
                    append_char(&word, d);
                    p->pos++;
                }
            }
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
        t->kind = T_EOF;
        return;
    case '\n':
        p->pos = i + 1;
        t->kind = T_NEWLINE;
        return;
    case ';': {
        char d = char_at(s, i + 1, &n);
        if (d == ';' || d == '&') {
            fail(p, "case statement");
            t->kind = T_ERROR;
            return;
        }
        p->pos = i + 1;
        t->kind = T_SEMI;
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
        t->kind = T_REDIR;
        if (d == '(') {
            fail(p, "process substitution");
            t->kind = T_ERROR;
            return;
        }
        if (c == '<' && d == '<') {
            char e = char_at(s, n, &m);
            if (e == '<') {
                p->pos = m; /* <<< here-string */
            } else {
                p->pos = e == '-' ? m : n;
                t->heredoc = true;
            }
        } else if (d == '&' || d == '>' || (c == '<' && d == '>') || (c == '>' && d == '|')) {
            p->pos = n;
        } else {
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

static void skip_newlines(struct parser *p)
{
    while (!failed(p) && peek(p)->kind == T_NEWLINE)
        consume(p);
}

static void list_command(struct parser *p, char **argv, char **assignments)
{
    struct state *st = p->st;
    if (st->count == st->cap) {
        st->cap = st->cap ? st->cap * 2 : 8;
        st->commands = xrealloc(st->commands, st->cap * sizeof(*st->commands));
    }
    if (!assignments)
        assignments = xcalloc(1, sizeof(char *));
    st->commands[st->count++] = (pdk_shell_command){.argv = argv, .assignments = assignments};
}

/* The word that names the command: argv[0], or the word after command/builtin. Reject what
 * cannot be judged from its text. */
static bool check_command_words(struct parser *p, char **argv, const unsigned *flags)
{
    size_t i = 0;
    for (;;) {
        unsigned f = flags[i];
        const char *w = argv[i];
        if (f & W_CMDSUBST)
            return fail(p, "command substitution in command position");
        if (f & W_PARAM)
            return fail(p, "variable in command position");
        if (f & W_ARITH)
            return fail(p, "arithmetic in command position");
        if ((f & W_GLOB) && strcmp(w, "[") != 0 && strcmp(w, "[[") != 0)
            return fail(p, "glob in command position");
        if (f & W_BRACE)
            return fail(p, "brace in command position");
        if (f & W_LEADING)
            return fail(p, "tilde or = expansion in command position");
        if (w[0] == '\0')
            return fail(p, "empty command name");
        static const char *const evaluators[] = {"eval", "exec",   "source", ".",
                                                 "trap", "coproc", "alias"};
        for (size_t e = 0; e < PDK_ARRAY_SIZE(evaluators); e++)
            if (strcmp(w, evaluators[e]) == 0)
                return fail_take(p, xasprintf("%s as the command", w));
        if (strcmp(w, "command") != 0 && strcmp(w, "builtin") != 0)
            return true;
        /* command [-pvV] [--] NAME, builtin NAME: NAME is what runs. */
        i++;
        while (argv[i] && argv[i][0] == '-') {
            if (strcmp(argv[i], "--") == 0) {
                i++;
                break;
            }
            if (strchr(argv[i], 'v') || strchr(argv[i], 'V'))
                return true; /* a lookup: nothing runs */
            if (flags[i] & (W_CMDSUBST | W_PARAM))
                return fail(p, "variable in command position");
            i++;
        }
        if (!argv[i])
            return true;
    }
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
        if (t->heredoc)
            return fail(p, "here-document");
        consume(p);
        t = peek(p);
        if (failed(p))
            return false;
        if (t->kind != T_WORD)
            return fail(p, "missing redirection target");
        consume(p);
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
            if (!parse_redirections(p))
                break;
            list_command(p, argv, NULL);
            return true;
        }
    }
    pdk_strv_free(argv);
    return false;
}

static bool parse_simple(struct parser *p)
{
    char **argv = NULL;
    char **assignments = NULL;
    unsigned *flags = NULL;
    size_t argc = 0;
    bool ok = false;

    for (;;) {
        struct token *t = peek(p);
        if (failed(p))
            goto out;
        if (t->kind == T_REDIR) {
            if (t->heredoc) {
                fail(p, "here-document");
                goto out;
            }
            consume(p);
            t = peek(p);
            if (failed(p))
                goto out;
            if (t->kind != T_WORD) {
                fail(p, "missing redirection target");
                goto out;
            }
            consume(p);
            continue;
        }
        if (t->kind == T_LPAREN || t->kind == T_DLPAREN) {
            fail(p, argc == 1 && !assignments ? "function definition" : "unexpected (");
            goto out;
        }
        if (t->kind != T_WORD)
            break;
        if (argc == 0 && (t->flags & W_ASSIGN)) {
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
    if (argc > 0) {
        if (!check_command_words(p, argv, flags))
            goto out;
        list_command(p, steal_pointer(&argv), steal_pointer(&assignments));
    }
    ok = true;
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
        return fail(p, "arithmetic command");
    case T_WORD:
        break;
    case T_REDIR:
        return parse_simple(p);
    case T_RPAREN:
        return fail(p, "unbalanced parentheses");
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
        return fail(p, "case statement");
    if (is_plain_word(t, "function"))
        return fail(p, "function definition");
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
    if (is_plain_word(t, "!"))
        consume(p);
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

/* Parse and_or lists until EOF, ')' or a closing reserved word, left in the lookahead. */
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
        if (t->kind == T_EOF || t->kind == T_RPAREN || is_closer(t)) {
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
        if (t->kind == T_EOF || t->kind == T_RPAREN || is_closer(t)) {
            ok = true;
            break;
        }
        fail(p, "syntax error");
        break;
    }
    p->depth--;
    return ok;
}

/* A whole script on text: the top level, and the inner text of ` `. */
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
        fail_take(p, xasprintf("unexpected '%s'", t->text ? t->text : "token"));
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
}

static void free_commands(pdk_shell_command *commands, size_t count)
{
    for (size_t i = 0; i < count; i++) {
        pdk_strv_free(commands[i].argv);
        pdk_strv_free(commands[i].assignments);
    }
    free(commands);
}

void pdk_shell_split(const char *script, struct pdk_shell_split *out)
{
    struct state st = {0};
    struct parser p = {.s = script ? script : "", .st = &st};
    parse_text(&p);
    if (p.have_peek)
        token_clear(&p.peek);
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
