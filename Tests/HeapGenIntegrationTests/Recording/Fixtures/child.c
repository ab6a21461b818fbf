/* The exec'd image: 6 callocs of 6 x 11 B (leaked), exit 0. */
#include <stdlib.h>

void *volatile sink[8];

int main(void)
{
    for (int i = 0; i < 6; i++) sink[i] = calloc(6, 11);
    return 0;
}
