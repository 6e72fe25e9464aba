/* A "program" with no main: the compose step must refuse it. */
int not_main(void) { return 0; }
