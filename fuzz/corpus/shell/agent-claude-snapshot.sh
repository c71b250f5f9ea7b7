SNAPSHOT_FILE=/home/agent/.claude/shell-snapshots/snapshot-bash-1796178293004-wpikl2.sh
      
      source "/home/agent/.bashrc" < /dev/null
      
      

      # First, create/clear the snapshot file
      echo "# Snapshot file" >| "$SNAPSHOT_FILE"

      # When this file is sourced, we first unalias to avoid conflicts
      # This is necessary because aliases get "frozen" inside function definitions at definition time,
      # which can cause unexpected behavior when functions use commands that conflict with aliases
      echo "# Unset all aliases to avoid conflicts with functions" >> "$SNAPSHOT_FILE"
      echo "unalias -a 2>/dev/null || true" >> "$SNAPSHOT_FILE"

      
      # shopt before functions: a body using extglob/globstar syntax only
      # re-parses with the option on.
      echo "# Shopt" >> "$SNAPSHOT_FILE"
      shopt -p >> "$SNAPSHOT_FILE"

      echo "# Functions" >> "$SNAPSHOT_FILE"

      # Force autoload all functions first
      declare -f > /dev/null 2>&1

      # Now get user function names - filter completion functions (single underscore prefix)
      # but keep double-underscore helpers (e.g. __zsh_like_cd from mise, __pyenv_init)
      # One eval per function so a body that no longer parses (rc=2, not fatal
      # in non-POSIX bash) drops only itself. The %q literal needs no fork
      # at source time, unlike a base64 command substitution.
      declare -F | (
        trap - DEBUG
        ((BASH_VERSINFO[0] * 100 + BASH_VERSINFO[1] >= 501)) &&
        __cc_all=$(
          __cc_count=0
          while [[ "$__cc_count" != none ]] && builtin read func; do
            func=${func##* }
            if [[ -z "$func" || "$func" == [-+]* ]]; then
              __cc_count=none
            elif [[ "$func" != _[!_]* ]]; then
              declare -f "$func"
              builtin printf '\037'
              __cc_count=$((__cc_count + 1))
            fi
          done
          builtin printf %s "$__cc_count"
        ) &&
        set -f &&
        IFS=$'\037' &&
        set -- $__cc_all &&
        [[ "${!#}" == "$(($# - 1))" ]] &&
        set -- "${@:1:$# - 1}" &&
        (($#)) &&
        printf 'eval %q > /dev/null 2>&1\n' "${@%$'\n'}" >> "$SNAPSHOT_FILE"
      ) || declare -F | while read func; do
        func=${func##* } # the name: the last word of each declare -F line
        # declare reads a name starting with - or + as an option, and eval one starting with -; other names need no "--"
        if [[ "$func" == [-+]* ]]; then
          printf 'eval -- %q > /dev/null 2>&1\n' "$(declare -f -- "$func")" >> "$SNAPSHOT_FILE"
        else
          [[ "$func" == _[!_]* ]] ||
            printf 'eval %q > /dev/null 2>&1\n' "$(declare -f "$func")" >> "$SNAPSHOT_FILE"
        fi
      done
    
      echo "# Shell Options" >> "$SNAPSHOT_FILE"
      set -o | awk '$2 == "on" || $1 == "monitor" {print "set -o " $1}' >> "$SNAPSHOT_FILE"
      echo "shopt -s expand_aliases" >> "$SNAPSHOT_FILE"
    
      echo "# Aliases" >> "$SNAPSHOT_FILE"
      # Filter out winpty aliases on Windows to avoid "stdin is not a tty" errors
      # Git Bash automatically creates aliases like "alias node='winpty node.exe'" for
      # programs that need Win32 Console in mintty, but winpty fails when there's no TTY
      if [[ "$OSTYPE" == "msys" ]] || [[ "$OSTYPE" == "cygwin" ]]; then
        # sed, not grep -v, whose exit 1 when no alias is left ends this script under errexit and pipefail.
        # Every line gets "alias -- " here: the filter works by line, so it can leave part of a multi-line alias behind.
        alias | sed -e "/='winpty /d" | sed -e '1001,$d' -e 's/^alias //g' -e 's/^/alias -- /' >> "$SNAPSHOT_FILE"
      else
        \alias -p | sed -e '1001,$d' -e 's/^alias -- /alias /' -e 's/^alias /alias -- /' >> "$SNAPSHOT_FILE"
      fi
  

      
      cat >> "$SNAPSHOT_FILE" << 'CLAUDE_CODE_END_pk0f2gpii2r'
# Check for rg availability
if ! hash rg 2>/dev/null && ! typeset -f rg >/dev/null 2>&1; then
  function rg {
  if [[ -x /opt/agent/node_modules/@anthropic-ai/claude-code-linux-x64/claude ]]; then
  if [[ -n ${ZSH_VERSION:-} ]]; then
    ARGV0=rg /opt/agent/node_modules/@anthropic-ai/claude-code-linux-x64/claude ${1+"$@"}
  elif [[ "$OSTYPE" == "msys" ]] || [[ "$OSTYPE" == "cygwin" ]] || [[ "$OSTYPE" == "win32" ]]; then
    ARGV0=rg /opt/agent/node_modules/@anthropic-ai/claude-code-linux-x64/claude ${1+"$@"}
  else
    (exec -a rg /opt/agent/node_modules/@anthropic-ai/claude-code-linux-x64/claude ${1+"$@"})
  fi
  elif [[ -x /home/agent/.local/bin/claude ]]; then
  if [[ -n ${ZSH_VERSION:-} ]]; then
    ARGV0=rg /home/agent/.local/bin/claude ${1+"$@"}
  elif [[ "$OSTYPE" == "msys" ]] || [[ "$OSTYPE" == "cygwin" ]] || [[ "$OSTYPE" == "win32" ]]; then
    ARGV0=rg /home/agent/.local/bin/claude ${1+"$@"}
  else
    (exec -a rg /home/agent/.local/bin/claude ${1+"$@"})
  fi
  else command rg ${1+"$@"}; fi
}
fi
# Shadow find/grep with embedded bfs/ugrep
unalias find 2>/dev/null || true
unalias grep 2>/dev/null || true
function find {
  if [[ -x /opt/agent/node_modules/@anthropic-ai/claude-code-linux-x64/claude ]]; then
  if [[ -n ${ZSH_VERSION:-} ]]; then
    ARGV0=bfs /opt/agent/node_modules/@anthropic-ai/claude-code-linux-x64/claude -S dfs -regextype findutils-default ${1+"$@"}
  elif [[ "$OSTYPE" == "msys" ]] || [[ "$OSTYPE" == "cygwin" ]] || [[ "$OSTYPE" == "win32" ]]; then
    ARGV0=bfs /opt/agent/node_modules/@anthropic-ai/claude-code-linux-x64/claude -S dfs -regextype findutils-default ${1+"$@"}
  else
    (exec -a bfs /opt/agent/node_modules/@anthropic-ai/claude-code-linux-x64/claude -S dfs -regextype findutils-default ${1+"$@"})
  fi
  elif [[ -x /home/agent/.local/bin/claude ]]; then
  if [[ -n ${ZSH_VERSION:-} ]]; then
    ARGV0=bfs /home/agent/.local/bin/claude -S dfs -regextype findutils-default ${1+"$@"}
  elif [[ "$OSTYPE" == "msys" ]] || [[ "$OSTYPE" == "cygwin" ]] || [[ "$OSTYPE" == "win32" ]]; then
    ARGV0=bfs /home/agent/.local/bin/claude -S dfs -regextype findutils-default ${1+"$@"}
  else
    (exec -a bfs /home/agent/.local/bin/claude -S dfs -regextype findutils-default ${1+"$@"})
  fi
  else command find ${1+"$@"}; fi
}
function grep {
  local _cc_a
  for _cc_a in ${1+"$@"}; do
    case "$_cc_a" in -*-filter*|-*-pager*|-*-view*|-*-format-open*|-*-config*|---*|-@*|-*-save-config*|-[Zz]*|-[!-]*[Zz]*|--null|--null-data) command grep ${1+"$@"}; return ;; esac
  done
  if [[ -x /opt/agent/node_modules/@anthropic-ai/claude-code-linux-x64/claude ]]; then
  if [[ -n ${ZSH_VERSION:-} ]]; then
    ARGV0=ugrep /opt/agent/node_modules/@anthropic-ai/claude-code-linux-x64/claude -G --ignore-files --hidden -I --encoding=UTF-8 --exclude-dir=.git --exclude-dir=.svn --exclude-dir=.hg --exclude-dir=.bzr --exclude-dir=.jj --exclude-dir=.sl ${1+"$@"}
  elif [[ "$OSTYPE" == "msys" ]] || [[ "$OSTYPE" == "cygwin" ]] || [[ "$OSTYPE" == "win32" ]]; then
    ARGV0=ugrep /opt/agent/node_modules/@anthropic-ai/claude-code-linux-x64/claude -G --ignore-files --hidden -I --encoding=UTF-8 --exclude-dir=.git --exclude-dir=.svn --exclude-dir=.hg --exclude-dir=.bzr --exclude-dir=.jj --exclude-dir=.sl ${1+"$@"}
  else
    (exec -a ugrep /opt/agent/node_modules/@anthropic-ai/claude-code-linux-x64/claude -G --ignore-files --hidden -I --encoding=UTF-8 --exclude-dir=.git --exclude-dir=.svn --exclude-dir=.hg --exclude-dir=.bzr --exclude-dir=.jj --exclude-dir=.sl ${1+"$@"})
  fi
  elif [[ -x /home/agent/.local/bin/claude ]]; then
  if [[ -n ${ZSH_VERSION:-} ]]; then
    ARGV0=ugrep /home/agent/.local/bin/claude -G --ignore-files --hidden -I --encoding=UTF-8 --exclude-dir=.git --exclude-dir=.svn --exclude-dir=.hg --exclude-dir=.bzr --exclude-dir=.jj --exclude-dir=.sl ${1+"$@"}
  elif [[ "$OSTYPE" == "msys" ]] || [[ "$OSTYPE" == "cygwin" ]] || [[ "$OSTYPE" == "win32" ]]; then
    ARGV0=ugrep /home/agent/.local/bin/claude -G --ignore-files --hidden -I --encoding=UTF-8 --exclude-dir=.git --exclude-dir=.svn --exclude-dir=.hg --exclude-dir=.bzr --exclude-dir=.jj --exclude-dir=.sl ${1+"$@"}
  else
    (exec -a ugrep /home/agent/.local/bin/claude -G --ignore-files --hidden -I --encoding=UTF-8 --exclude-dir=.git --exclude-dir=.svn --exclude-dir=.hg --exclude-dir=.bzr --exclude-dir=.jj --exclude-dir=.sl ${1+"$@"})
  fi
  else command grep ${1+"$@"}; fi
}
# Shadow pkill to refuse patterns matching the CLI process
unalias pkill 2>/dev/null || true
function pkill {
  if [ -n "${CLAUDE_PID:-}" ] && [ -r "/proc/${CLAUDE_PID}/comm" ]; then
    local _cc_skip="" _cc_a
    local -a _cc_probe=()
    for _cc_a in ${1+"$@"}; do
      if [ -n "$_cc_skip" ]; then _cc_skip=""; continue; fi
      case "$_cc_a" in
        --signal) _cc_skip=1 ;;
        --signal=*|-e|--echo) ;;
        -[0-9]*) ;;
        -[PUGOF]?*) _cc_probe+=("$_cc_a") ;;
        -[ABCDEFGHIJKLMNOPQRSTUVWXYZ][ABCDEFGHIJKLMNOPQRSTUVWXYZ0-9]*) ;;
        *) _cc_probe+=("$_cc_a") ;;
      esac
    done
    if command pgrep ${_cc_probe[@]+"${_cc_probe[@]}"} 2>/dev/null | command grep -qx "${CLAUDE_PID}"; then
      printf 'pkill: refusing to run — this pattern matches the Claude CLI process (PID %s). Narrow the pattern, or target your own children with `pkill -P $$ ...`.\n' "${CLAUDE_PID}" >&2
      return 1
    fi
  fi
  command pkill ${1+"$@"}
}
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
CLAUDE_CODE_END_pk0f2gpii2r
  

      # Exit silently on success, only report errors
      if [ ! -f "$SNAPSHOT_FILE" ]; then
        echo "Error: Snapshot file was not created at $SNAPSHOT_FILE" >&2
        exit 1
      fi
    