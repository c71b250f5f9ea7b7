cat <<EOF
hello
EOF
