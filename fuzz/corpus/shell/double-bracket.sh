[[ -n $x && $a < $b || ( -f y ) ]] && echo yes
