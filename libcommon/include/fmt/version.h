/* The fmtkit version: tools print it, files this project writes may record it. */
#ifndef FMT_VERSION_H
#define FMT_VERSION_H

#define FMTKIT_VERSION "0.1.0"

#endif
