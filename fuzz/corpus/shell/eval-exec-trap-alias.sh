eval 'git push' origin; exec -a n /bin/x; trap 'rm -f "$t"' EXIT; trap - DEBUG
alias ll='ls -la' sudo='sudo '; sudo ll
