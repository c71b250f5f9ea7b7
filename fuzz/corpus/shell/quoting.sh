echo 'a b' "c \" $HOME" a\ b 'x'"y"z ""
