echo "$(a
