/* What the files of the extension module curate.extract._walk share. _walk.c makes the module: the block walk
 * over Lexbor's tree, its Block type and the module's init, which adds the functions of the other files:
 * _score.c (extract.Main's block classifier: features, context, logistic models) and _depth.c (the guards'
 * nesting-depth pre-scan). _text.h holds the text utilities they use. */
#ifndef CURATE_EXTRACT_WALK_H
#define CURATE_EXTRACT_WALK_H

#include "_text.h"

#define MAXNAME 16 /* room for a tag name and its NUL: longer names are in no table */

extern PyTypeObject *block_type; /* Block (_walk.c), made by the module's init */

extern PyMethodDef score_methods[]; /* _score.c: local, context, logistic, scores, configure_scores */
void init_classes(void);            /* _score.c's table of character classes, filled once by the module's init */

extern PyMethodDef depth_methods[]; /* _depth.c: nesting_depth */

#endif
