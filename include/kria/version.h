/*
 * kria's version, for the WARC software field, the console and --version.
 */
#ifndef KRIA_VERSION_H
#define KRIA_VERSION_H

#define KRIA_VERSION "0.1.0"

#endif
