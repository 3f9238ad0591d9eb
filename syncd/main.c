#include <stdio.h>
int main(void)
{
	puts("syncd " SYNCD_VERSION);
	return 0;
}
