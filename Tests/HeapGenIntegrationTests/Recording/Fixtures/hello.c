/* Trivial program for the static and setuid refusals. */
int main(void) { return 0; }
