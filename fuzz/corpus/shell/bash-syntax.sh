IFS=$'\037' read -r a; echo $'a\0b' $'\x41'
(( i++ )) && (($#))
a=(x "$(date)" [3]=y); a+=(z); local -a b=()
echo ${x:-$(id)} "${@:1:$# - 1}" "${@%$'\n'}" ${!#}
