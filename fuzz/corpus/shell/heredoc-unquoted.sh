cat <<EOF
user: $(whoami) `id -u`
\$(not)
EOF
cat <<-A <<'B' | grep x
	body
	A
$(date)
B
