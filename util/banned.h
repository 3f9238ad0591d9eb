/*
 * banned: functions this code base does not call, made compile errors
 * (the idea of git's banned.h). Each has a bounded or checked
 * replacement: snprintf/asprintf or struct buf for strcpy, strcat and
 * sprintf; strtol with its end pointer for atoi; strtok_r for strtok;
 * gmtime_r/localtime_r for gmtime/localtime.
 *
 * Include it last, after every system header, in each source file of
 * the product (`make check-banned` checks that it is).
 */
#ifndef UTIL_BANNED_H
#define UTIL_BANNED_H

#define BANNED(func) sorry_##func##_is_a_banned_function

#undef strcpy
#define strcpy(x, y) BANNED(strcpy)
#undef strcat
#define strcat(x, y) BANNED(strcat)
#undef strncpy
#define strncpy(x, y, n) BANNED(strncpy)
#undef strncat
#define strncat(x, y, n) BANNED(strncat)
#undef sprintf
#define sprintf(...) BANNED(sprintf)
#undef vsprintf
#define vsprintf(...) BANNED(vsprintf)
#undef atoi
#define atoi(x) BANNED(atoi)
#undef atol
#define atol(x) BANNED(atol)
#undef atoll
#define atoll(x) BANNED(atoll)
#undef strtok
#define strtok(x, y) BANNED(strtok)
#undef gmtime
#define gmtime(t) BANNED(gmtime)
#undef localtime
#define localtime(t) BANNED(localtime)
#undef ctime
#define ctime(t) BANNED(ctime)
#undef asctime
#define asctime(t) BANNED(asctime)

#endif
