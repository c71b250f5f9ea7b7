if test -f x; then rm x; elif [ -d x ]; then rmdir x; else echo none; fi
while read l
do echo "$l"; done < f
until false; do :; done
