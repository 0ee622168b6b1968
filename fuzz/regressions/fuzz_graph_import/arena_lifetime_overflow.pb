
lifetime_overflow
aRelux"t
bRelut"u
cAddtu"y
x 
t €€€€€€€€@
u 
y "x*y