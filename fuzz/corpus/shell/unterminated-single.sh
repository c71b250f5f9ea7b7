echo 'unterminated
