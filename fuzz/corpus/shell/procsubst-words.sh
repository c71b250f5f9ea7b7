diff <(sort a) >(gzip >x) x<(true)y
while read -r n; do :; done < <(compgen -e)
