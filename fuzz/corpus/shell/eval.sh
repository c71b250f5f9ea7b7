eval "$x"; exec rm; . ./env; command -v eval; builtin eval x
