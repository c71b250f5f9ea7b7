$CMD arg; ${X} y; "$HOME/bin/x"
