/* cmd_doctor.c: not written yet. */
#include "cli.h"

#include <stdio.h>

int pdk_cmd_doctor(int argc, char **argv)
{
    fprintf(stderr, "paddock doctor: not available in this build yet\n");
    return PDK_EXIT_FAILED;
}
