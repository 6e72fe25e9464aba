/* A library prog_c.c needs (DT_NEEDED, found through its RPATH): not in the driver's global
 * scope, so its symbols come through the template's dependencies. */
int hook_value(void) { return 1; } /* the driver's definition wins */
int local_only(void) { return 3; }
int versioned_v1(void) { return 11; }
int versioned_v2(void) { return 12; }
__asm__(".symver versioned_v1, versioned@V1");
__asm__(".symver versioned_v2, versioned@@V2");
