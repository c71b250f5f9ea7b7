( ( ( { a; } ) ) ) | { ( b ) ; }
A+=1 x; a[1]=y z; /bin/r? x; {a,b}; =ls
