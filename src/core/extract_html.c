/*
 * Streaming HTML link extraction (include/kria/extract.h): a tokenizer
 * after the WHATWG HTML tokenizer states, fed chunk by chunk, that builds
 * no tree and keeps no token except the current tag's interesting
 * attribute values.
 *
 * It follows the spec's states for tags, attributes (names lowercased,
 * the three value syntaxes, duplicates dropped: first wins), character
 * references in attribute values (numeric ones fully, named ones from a
 * table holding every legacy entity and those that matter in URLs),
 * comments (including abrupt "<!-->" and "--!>" endings), bogus comments,
 * DOCTYPE, CDATA sections (only inside svg/math, else bogus comments) and
 * the raw-text elements: script data with its escaped and double-escaped
 * states, RAWTEXT/RCDATA for style, textarea, title, xmp, iframe, noembed
 * and noframes, and plaintext. The little tree construction needed is a
 * counter of open svg/math elements (reset by the "breakout" tags), which
 * decides whether raw-text elements and CDATA apply. Text between tags is
 * skipped with memchr. kr_extract_html_feed is one switch over the
 * tokenizer states of the WHATWG HTML Standard (13.2.5 Tokenization),
 * kept whole on purpose: each case reads as its state in the spec.
 *
 * Links are emitted when a start tag ends, in attribute order, because some
 * depend on other attributes (link rel, meta http-equiv, input type). The
 * values are held in one bounded buffer; a value over max_value is skipped.
 * CSS in style attributes and <style> elements goes through the CSS scanner
 * of extract_css.c as it arrives.
 *
 * Sections: tables (tags, attributes, entities); value sinks; link
 * emission (srcset, meta refresh, rel); the tokenizer; the public API.
 */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "extract_int.h"
#include "kria/error.h"
#include "kria/mem.h"

/* ---- tables ---- */

enum tag {
  T_OTHER, T_A, T_AREA, T_AUDIO, T_BASE, T_BODY, T_BUTTON, T_EMBED,
  T_FEIMAGE, T_FORM, T_FRAME, T_IFRAME, T_IMAGE, T_IMG, T_INPUT, T_LINK,
  T_MATH, T_META, T_NOEMBED, T_NOFRAMES, T_OBJECT, T_PLAINTEXT, T_SCRIPT,
  T_SOURCE, T_STYLE, T_SVG, T_TABLE, T_TD, T_TEXTAREA, T_TH, T_TITLE, T_TR,
  T_TRACK, T_USE, T_VIDEO, T_XMP, T_BREAKOUT, /* any other breakout tag */
};

enum { TF_BREAKOUT = 1 }; /* start tag ends svg/math foreign content */

/* Tags kria knows, in one array per name length; a tag name is looked up
 * once per tag by length, then by a short scan. */
struct tagdef {
  char name[11];
  uint8_t id, flags;
};
static const struct tagdef tags1[] = {
    {"a", T_A, 0}, {"b", T_BREAKOUT, TF_BREAKOUT},
    {"i", T_BREAKOUT, TF_BREAKOUT}, {"p", T_BREAKOUT, TF_BREAKOUT},
    {"s", T_BREAKOUT, TF_BREAKOUT}, {"u", T_BREAKOUT, TF_BREAKOUT},
};
static const struct tagdef tags2[] = {
    {"br", T_BREAKOUT, TF_BREAKOUT}, {"dd", T_BREAKOUT, TF_BREAKOUT},
    {"dl", T_BREAKOUT, TF_BREAKOUT}, {"dt", T_BREAKOUT, TF_BREAKOUT},
    {"em", T_BREAKOUT, TF_BREAKOUT}, {"h1", T_BREAKOUT, TF_BREAKOUT},
    {"h2", T_BREAKOUT, TF_BREAKOUT}, {"h3", T_BREAKOUT, TF_BREAKOUT},
    {"h4", T_BREAKOUT, TF_BREAKOUT}, {"h5", T_BREAKOUT, TF_BREAKOUT},
    {"h6", T_BREAKOUT, TF_BREAKOUT}, {"hr", T_BREAKOUT, TF_BREAKOUT},
    {"li", T_BREAKOUT, TF_BREAKOUT}, {"ol", T_BREAKOUT, TF_BREAKOUT},
    {"td", T_TD, 0}, {"th", T_TH, 0}, {"tr", T_TR, 0},
    {"tt", T_BREAKOUT, TF_BREAKOUT}, {"ul", T_BREAKOUT, TF_BREAKOUT},
};
static const struct tagdef tags3[] = {
    {"big", T_BREAKOUT, TF_BREAKOUT}, {"div", T_BREAKOUT, TF_BREAKOUT},
    {"img", T_IMG, TF_BREAKOUT}, {"pre", T_BREAKOUT, TF_BREAKOUT},
    {"sub", T_BREAKOUT, TF_BREAKOUT}, {"sup", T_BREAKOUT, TF_BREAKOUT},
    {"svg", T_SVG, 0}, {"use", T_USE, 0}, {"var", T_BREAKOUT, TF_BREAKOUT},
    {"xmp", T_XMP, 0},
};
static const struct tagdef tags4[] = {
    {"area", T_AREA, 0}, {"base", T_BASE, 0}, {"body", T_BODY, TF_BREAKOUT},
    {"code", T_BREAKOUT, TF_BREAKOUT}, {"form", T_FORM, 0},
    {"head", T_BREAKOUT, TF_BREAKOUT}, {"link", T_LINK, 0}, {"math", T_MATH, 0},
    {"menu", T_BREAKOUT, TF_BREAKOUT}, {"meta", T_META, TF_BREAKOUT},
    {"nobr", T_BREAKOUT, TF_BREAKOUT}, {"ruby", T_BREAKOUT, TF_BREAKOUT},
    {"span", T_BREAKOUT, TF_BREAKOUT},
};
static const struct tagdef tags5[] = {
    {"audio", T_AUDIO, 0}, {"embed", T_EMBED, TF_BREAKOUT},
    {"frame", T_FRAME, 0}, {"image", T_IMAGE, 0}, {"input", T_INPUT, 0},
    {"small", T_BREAKOUT, TF_BREAKOUT}, {"style", T_STYLE, 0},
    {"table", T_TABLE, TF_BREAKOUT}, {"title", T_TITLE, 0},
    {"track", T_TRACK, 0}, {"video", T_VIDEO, 0},
};
static const struct tagdef tags6[] = {
    {"button", T_BUTTON, 0}, {"center", T_BREAKOUT, TF_BREAKOUT},
    {"iframe", T_IFRAME, 0}, {"object", T_OBJECT, 0}, {"script", T_SCRIPT, 0},
    {"source", T_SOURCE, 0}, {"strike", T_BREAKOUT, TF_BREAKOUT},
    {"strong", T_BREAKOUT, TF_BREAKOUT},
};
static const struct tagdef tags7[] = {
    {"feimage", T_FEIMAGE, 0}, {"listing", T_BREAKOUT, TF_BREAKOUT},
    {"noembed", T_NOEMBED, 0},
};
static const struct tagdef tags8[] = {
    {"noframes", T_NOFRAMES, 0}, {"textarea", T_TEXTAREA, 0},
};
static const struct tagdef tags9[] = {
    {"plaintext", T_PLAINTEXT, 0},
};
static const struct tagdef tags10[] = {
    {"blockquote", T_BREAKOUT, TF_BREAKOUT},
};
static const struct {
  const struct tagdef *t;
  uint8_t n;
} tags_by_len[] = {
    [1] = {tags1, sizeof tags1 / sizeof tags1[0]},
    [2] = {tags2, sizeof tags2 / sizeof tags2[0]},
    [3] = {tags3, sizeof tags3 / sizeof tags3[0]},
    [4] = {tags4, sizeof tags4 / sizeof tags4[0]},
    [5] = {tags5, sizeof tags5 / sizeof tags5[0]},
    [6] = {tags6, sizeof tags6 / sizeof tags6[0]},
    [7] = {tags7, sizeof tags7 / sizeof tags7[0]},
    [8] = {tags8, sizeof tags8 / sizeof tags8[0]},
    [9] = {tags9, sizeof tags9 / sizeof tags9[0]},
    [10] = {tags10, sizeof tags10 / sizeof tags10[0]},
};
#define TAG_NAME_MAX 10

static const struct tagdef *tag_lookup(const char *name, size_t n) {
  if (n == 0 || n > TAG_NAME_MAX) return NULL;
  for (unsigned k = 0; k < tags_by_len[n].n; k++) {
    const struct tagdef *d = &tags_by_len[n].t[k];
    size_t j = 0;
    while (j < n && d->name[j] == name[j]) j++;
    if (j == n) return d;
  }
  return NULL;
}

enum attr {
  A_OTHER, A_HREF, A_SRC, A_SRCSET, A_REL, A_CONTENT, A_HTTP_EQUIV, A_TYPE,
  A_STYLE, A_BACKGROUND, A_POSTER, A_DATA, A_ACTION, A_FORMACTION,
  A_XLINK_HREF, A_COUNT
};

static uint8_t attr_lookup(const char *s, size_t n) {
#define IS_(lit) (memcmp(s, lit, sizeof(lit) - 1) == 0) /* n checked */
  switch (n) {
  case 3: return IS_("src") ? A_SRC : IS_("rel") ? A_REL : A_OTHER;
  case 4:
    return IS_("href") ? A_HREF : IS_("type") ? A_TYPE : IS_("data") ? A_DATA
                                                                      : A_OTHER;
  case 5: return IS_("style") ? A_STYLE : A_OTHER;
  case 6:
    return IS_("srcset") ? A_SRCSET : IS_("poster") ? A_POSTER
           : IS_("action") ? A_ACTION : A_OTHER;
  case 7: return IS_("content") ? A_CONTENT : A_OTHER;
  case 10:
    return IS_("http-equiv") ? A_HTTP_EQUIV : IS_("background") ? A_BACKGROUND
           : IS_("formaction") ? A_FORMACTION : IS_("xlink:href") ? A_XLINK_HREF
           : A_OTHER;
  default: return A_OTHER;
  }
#undef IS_
}

/* URL-bearing attributes of HTML elements. Entries marked F need
 * KR_EXTRACT_FORMS. link href, meta content and input src are further
 * decided by rel, http-equiv and type in emit_tag_links(). */
enum { U_SRCSET = 1, U_FORMS = 2 };
static const struct urlattr {
  uint8_t tag, attr, kind, flags;
  const char *ctx;
} urlattrs[] = {
    {T_A, A_HREF, 'L', 0, "a/@href"},
    {T_AREA, A_HREF, 'L', 0, "area/@href"},
    {T_LINK, A_HREF, 'L', 0, "link/@href"},
    {T_META, A_CONTENT, 'L', 0, "meta/@content"},
    {T_BASE, A_HREF, 'B', 0, "base/@href"},
    {T_IMG, A_SRC, 'E', 0, "img/@src"},
    {T_IMG, A_SRCSET, 'E', U_SRCSET, "img/@srcset"},
    {T_IMAGE, A_SRC, 'E', 0, "img/@src"}, /* <image> is <img> in HTML */
    {T_IMAGE, A_SRCSET, 'E', U_SRCSET, "img/@srcset"},
    {T_SCRIPT, A_SRC, 'E', 0, "script/@src"},
    {T_IFRAME, A_SRC, 'E', 0, "iframe/@src"},
    {T_FRAME, A_SRC, 'E', 0, "frame/@src"},
    {T_EMBED, A_SRC, 'E', 0, "embed/@src"},
    {T_SOURCE, A_SRC, 'E', 0, "source/@src"},
    {T_SOURCE, A_SRCSET, 'E', U_SRCSET, "source/@srcset"},
    {T_VIDEO, A_SRC, 'E', 0, "video/@src"},
    {T_VIDEO, A_POSTER, 'E', 0, "video/@poster"},
    {T_AUDIO, A_SRC, 'E', 0, "audio/@src"},
    {T_TRACK, A_SRC, 'E', 0, "track/@src"},
    {T_INPUT, A_SRC, 'E', 0, "input/@src"},
    {T_OBJECT, A_DATA, 'E', 0, "object/@data"},
    {T_BODY, A_BACKGROUND, 'E', 0, "body/@background"},
    {T_TABLE, A_BACKGROUND, 'E', 0, "table/@background"},
    {T_TD, A_BACKGROUND, 'E', 0, "td/@background"},
    {T_TH, A_BACKGROUND, 'E', 0, "th/@background"},
    {T_TR, A_BACKGROUND, 'E', 0, "tr/@background"},
    {T_FORM, A_ACTION, 'L', U_FORMS, "form/@action"},
    {T_BUTTON, A_FORMACTION, 'L', U_FORMS, "button/@formaction"},
    {T_INPUT, A_FORMACTION, 'L', U_FORMS, "input/@formaction"},
};

static const struct urlattr *urlattr_lookup(uint8_t tag, uint8_t attr) {
  for (size_t k = 0; k < sizeof urlattrs / sizeof urlattrs[0]; k++)
    if (urlattrs[k].tag == tag && urlattrs[k].attr == attr) return &urlattrs[k];
  return NULL;
}

/* Named character references: every legacy one (those valid without ';',
 * all mapping into U+0000..U+00FF) and, requiring ';', those that matter
 * in URLs or are common in text. A name missing here stays literal. */
static const struct entity {
  const char *name;
  uint16_t cp;
  uint8_t legacy;
} entities[] = {
    {"AElig", 0xc6, 1}, {"AMP", 0x26, 1}, {"Aacute", 0xc1, 1},
    {"Acirc", 0xc2, 1}, {"Agrave", 0xc0, 1}, {"Aring", 0xc5, 1},
    {"Atilde", 0xc3, 1}, {"Auml", 0xc4, 1}, {"COPY", 0xa9, 1},
    {"Ccedil", 0xc7, 1}, {"ETH", 0xd0, 1}, {"Eacute", 0xc9, 1},
    {"Ecirc", 0xca, 1}, {"Egrave", 0xc8, 1}, {"Euml", 0xcb, 1},
    {"GT", 0x3e, 1}, {"Hat", 0x5e, 0}, {"Iacute", 0xcd, 1},
    {"Icirc", 0xce, 1}, {"Igrave", 0xcc, 1}, {"Iuml", 0xcf, 1},
    {"LT", 0x3c, 1}, {"NewLine", 0x0a, 0}, {"Ntilde", 0xd1, 1},
    {"Oacute", 0xd3, 1}, {"Ocirc", 0xd4, 1}, {"Ograve", 0xd2, 1},
    {"Oslash", 0xd8, 1}, {"Otilde", 0xd5, 1}, {"Ouml", 0xd6, 1},
    {"QUOT", 0x22, 1}, {"REG", 0xae, 1}, {"THORN", 0xde, 1},
    {"Tab", 0x09, 0}, {"Uacute", 0xda, 1}, {"Ucirc", 0xdb, 1},
    {"Ugrave", 0xd9, 1}, {"Uuml", 0xdc, 1}, {"Yacute", 0xdd, 1},
    {"aacute", 0xe1, 1}, {"acirc", 0xe2, 1}, {"acute", 0xb4, 1},
    {"aelig", 0xe6, 1}, {"agrave", 0xe0, 1}, {"amp", 0x26, 1},
    {"apos", 0x27, 0}, {"aring", 0xe5, 1}, {"ast", 0x2a, 0},
    {"atilde", 0xe3, 1}, {"auml", 0xe4, 1}, {"bdquo", 0x201e, 0},
    {"brvbar", 0xa6, 1}, {"bsol", 0x5c, 0}, {"bull", 0x2022, 0},
    {"ccedil", 0xe7, 1}, {"cedil", 0xb8, 1}, {"cent", 0xa2, 1},
    {"colon", 0x3a, 0}, {"comma", 0x2c, 0}, {"commat", 0x40, 0},
    {"copy", 0xa9, 1}, {"curren", 0xa4, 1}, {"deg", 0xb0, 1},
    {"divide", 0xf7, 1}, {"dollar", 0x24, 0}, {"eacute", 0xe9, 1},
    {"ecirc", 0xea, 1}, {"egrave", 0xe8, 1}, {"equals", 0x3d, 0},
    {"eth", 0xf0, 1}, {"euml", 0xeb, 1}, {"euro", 0x20ac, 0},
    {"excl", 0x21, 0}, {"frac12", 0xbd, 1}, {"frac14", 0xbc, 1},
    {"frac34", 0xbe, 1}, {"grave", 0x60, 0}, {"gt", 0x3e, 1},
    {"hellip", 0x2026, 0}, {"hyphen", 0x2010, 0}, {"iacute", 0xed, 1},
    {"icirc", 0xee, 1}, {"iexcl", 0xa1, 1}, {"igrave", 0xec, 1},
    {"iquest", 0xbf, 1}, {"iuml", 0xef, 1}, {"laquo", 0xab, 1},
    {"lbrace", 0x7b, 0}, {"lbrack", 0x5b, 0}, {"lcub", 0x7b, 0},
    {"ldquo", 0x201c, 0}, {"lowbar", 0x5f, 0}, {"lpar", 0x28, 0},
    {"lsqb", 0x5b, 0}, {"lsquo", 0x2018, 0}, {"lt", 0x3c, 1},
    {"macr", 0xaf, 1}, {"mdash", 0x2014, 0}, {"micro", 0xb5, 1},
    {"middot", 0xb7, 1}, {"nbsp", 0xa0, 1}, {"ndash", 0x2013, 0},
    {"not", 0xac, 1}, {"ntilde", 0xf1, 1}, {"num", 0x23, 0},
    {"oacute", 0xf3, 1}, {"ocirc", 0xf4, 1}, {"ograve", 0xf2, 1},
    {"ordf", 0xaa, 1}, {"ordm", 0xba, 1}, {"oslash", 0xf8, 1},
    {"otilde", 0xf5, 1}, {"ouml", 0xf6, 1}, {"para", 0xb6, 1},
    {"percnt", 0x25, 0}, {"period", 0x2e, 0}, {"plus", 0x2b, 0},
    {"plusmn", 0xb1, 1}, {"pound", 0xa3, 1}, {"quest", 0x3f, 0},
    {"quot", 0x22, 1}, {"raquo", 0xbb, 1}, {"rbrace", 0x7d, 0},
    {"rbrack", 0x5d, 0}, {"rcub", 0x7d, 0}, {"rdquo", 0x201d, 0},
    {"reg", 0xae, 1}, {"rpar", 0x29, 0}, {"rsqb", 0x5d, 0},
    {"rsquo", 0x2019, 0}, {"sbquo", 0x201a, 0}, {"sect", 0xa7, 1},
    {"semi", 0x3b, 0}, {"shy", 0xad, 1}, {"sol", 0x2f, 0},
    {"sup1", 0xb9, 1}, {"sup2", 0xb2, 1}, {"sup3", 0xb3, 1},
    {"szlig", 0xdf, 1}, {"thorn", 0xfe, 1}, {"times", 0xd7, 1},
    {"trade", 0x2122, 0}, {"uacute", 0xfa, 1}, {"ucirc", 0xfb, 1},
    {"ugrave", 0xf9, 1}, {"uml", 0xa8, 1}, {"uuml", 0xfc, 1},
    {"verbar", 0x7c, 0}, {"vert", 0x7c, 0}, {"yacute", 0xfd, 1},
    {"yen", 0xa5, 1}, {"yuml", 0xff, 1},
};

#define NENTITIES (sizeof entities / sizeof entities[0])

static const struct entity *entity_lookup(const char *name, size_t n) {
  size_t lo = 0, hi = NENTITIES;
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    const char *t = entities[mid].name;
    size_t tn = strlen(t);
    int c = memcmp(name, t, n < tn ? n : tn);
    if (c == 0) c = (n > tn) - (n < tn);
    if (c == 0) return &entities[mid];
    if (c < 0) hi = mid;
    else lo = mid + 1;
  }
  return NULL;
}

/* Numeric references to 0x80..0x9F mean windows-1252 (WHATWG). */
static const uint16_t c1_remap[32] = {
    0x20ac, 0x81, 0x201a, 0x192, 0x201e, 0x2026, 0x2020, 0x2021,
    0x2c6, 0x2030, 0x160, 0x2039, 0x152, 0x8d, 0x17d, 0x8f,
    0x90, 0x2018, 0x2019, 0x201c, 0x201d, 0x2022, 0x2013, 0x2014,
    0x2dc, 0x2122, 0x161, 0x203a, 0x153, 0x9d, 0x17e, 0x178,
};

enum { K_WS = 1, K_ALPHA = 2, K_DIGIT = 4, K_HEX = 8, K_UPPER = 16 };
static const uint8_t cls[256] = {
    ['\t'] = K_WS, ['\n'] = K_WS, ['\f'] = K_WS, ['\r'] = K_WS, [' '] = K_WS,
    ['0' ... '9'] = K_DIGIT | K_HEX, ['A' ... 'F'] = K_ALPHA | K_HEX | K_UPPER,
    ['G' ... 'Z'] = K_ALPHA | K_UPPER, ['a' ... 'f'] = K_ALPHA | K_HEX,
    ['g' ... 'z'] = K_ALPHA,
};
#define IS(c, k) (cls[(unsigned char)(c)] & (k))
#define LOWER(c) ((char)(IS(c, K_UPPER) ? (c) + 32 : (c)))

/* ---- the extractor ---- */

enum state {
  S_DATA, S_TAG_OPEN, S_END_TAG_OPEN, S_TAG_NAME, S_BEFORE_ATTR_NAME,
  S_ATTR_NAME, S_AFTER_ATTR_NAME, S_BEFORE_ATTR_VALUE, S_AV_QUOTED,
  S_AV_UNQUOTED, S_AFTER_AV_QUOTED, S_SELF_CLOSING,
  S_CR, S_CR_NAMED, S_CR_NUM, S_CR_HEX_START, S_CR_DEC, S_CR_HEX,
  S_MDO, S_COMMENT_START, S_COMMENT_START_DASH, S_COMMENT, S_COMMENT_END_DASH,
  S_COMMENT_END, S_COMMENT_END_BANG, S_BOGUS_COMMENT,
  S_CDATA, S_CDATA_B1, S_CDATA_B2,
  S_RAW, S_RAW_LT, S_END_NAME,
  S_SCRIPT, S_SCRIPT_LT, S_SCRIPT_ESC_START, S_SCRIPT_ESC_START_DASH,
  S_SCRIPT_ESC, S_SCRIPT_ESC_DASH, S_SCRIPT_ESC_DD, S_SCRIPT_ESC_LT,
  S_SCRIPT_DESC_START, S_SCRIPT_DESC, S_SCRIPT_DESC_DASH, S_SCRIPT_DESC_DD,
  S_SCRIPT_DESC_LT, S_SCRIPT_DESC_END,
  S_PLAINTEXT, S_DONE,
};

enum { V_SKIP, V_REC, V_CSS }; /* where an attribute value goes */

#define MAX_RECS 8  /* recorded attributes per tag; at most 4 are possible */
#define NAME_MAX_ 15 /* longer tag/attribute names are uninteresting */
#define ENT_MAX 32  /* longer than any entity name */

struct rec {
  uint8_t attr;
  uint8_t bad;       /* value exceeded max_value */
  uint32_t off, len; /* in tb */
};

struct kr_html_extractor {
  kr__emitter_t em;
  kr__css_t css;
  kr_buf_t tb;       /* values of the current tag's recorded attributes */
  struct rec rec[MAX_RECS];
  uint8_t nrec;
  uint8_t state;
  uint8_t ret;       /* state a character reference or end-tag match returns to */
  uint8_t tag;       /* T_* of the current tag */
  uint8_t tag_foreign; /* current start tag is in svg/math content */
  uint8_t end_tag;
  uint8_t self_closing;
  uint8_t raw;       /* T_* of the open raw-text element */
  uint8_t raw_len;   /* ... and its name */
  const char *raw_name;
  uint8_t tn_len;    /* NAME_MAX_ + 1 once the name is too long */
  uint8_t an_len;
  uint8_t attr;      /* A_* of the current attribute */
  uint8_t vmode;     /* V_* */
  uint8_t vquote;
  uint8_t vrec;      /* index of the record the value fills */
  uint8_t ent_len;
  uint8_t num_x;     /* 'x' or 'X' of a hex reference, 0 if decimal */
  uint8_t md_n;      /* markup declaration: bytes matched */
  uint8_t md_cand;   /* ... candidates still possible (MD_* bits) */
  uint8_t em_n;      /* end tag name bytes matched in raw text */
  uint8_t held_n;    /* bytes of "</name" held back from the CSS scanner */
  uint8_t sc_n;      /* "script" bytes matched in script escapes */
  uint8_t sc_bad;
  uint8_t base_done; /* the first <base href> was seen */
  uint8_t finished;
  uint32_t seen;     /* A_* bits seen on the current tag (duplicates) */
  uint32_t num;      /* numeric reference value, saturated */
  uint32_t foreign;  /* open svg/math elements, saturated */
  char tn[NAME_MAX_ + 1];
  char an[NAME_MAX_ + 1];
  char ent[ENT_MAX];
  char held[2 + NAME_MAX_];
};

enum { MD_COMMENT = 1, MD_DOCTYPE = 2, MD_CDATA = 4 };

static void set_raw(kr_html_extractor_t *x, uint8_t id) {
  const char *name;
  switch (id) {
  case T_SCRIPT: name = "script"; break;
  case T_STYLE: name = "style"; break;
  case T_TEXTAREA: name = "textarea"; break;
  case T_TITLE: name = "title"; break;
  case T_XMP: name = "xmp"; break;
  case T_IFRAME: name = "iframe"; break;
  case T_NOEMBED: name = "noembed"; break;
  case T_NOFRAMES: name = "noframes"; break;
  default: name = ""; break;
  }
  x->raw = id;
  x->raw_name = name;
  x->raw_len = (uint8_t)strlen(name);
}

/* ---- value sinks ---- */

static int vput(kr_html_extractor_t *x, const char *p, size_t n) {
  if (x->vmode == V_CSS) return kr__css_feed(&x->css, p, n);
  if (x->vmode != V_REC) return 0;
  struct rec *r = &x->rec[x->vrec];
  if (r->bad) return 0;
  if (x->tb.len - r->off + n > x->em.o.max_value ||
      kr_buf_append(&x->tb, p, n) != 0) {
    r->bad = 1;
    x->tb.len = r->off; /* give the room back */
  }
  return 0;
}

static int vput_cp(kr_html_extractor_t *x, uint32_t cp) {
  char u[4];
  size_t n;
  if (cp < 0x80) {
    u[0] = (char)cp, n = 1;
  } else if (cp < 0x800) {
    u[0] = (char)(0xc0 | cp >> 6), u[1] = (char)(0x80 | (cp & 0x3f)), n = 2;
  } else if (cp < 0x10000) {
    u[0] = (char)(0xe0 | cp >> 12), u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
    u[2] = (char)(0x80 | (cp & 0x3f)), n = 3;
  } else {
    u[0] = (char)(0xf0 | cp >> 18), u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
    u[2] = (char)(0x80 | ((cp >> 6) & 0x3f)), u[3] = (char)(0x80 | (cp & 0x3f));
    n = 4;
  }
  return vput(x, u, n);
}

static uint32_t numeric_cp(uint32_t v) {
  if (v == 0 || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return 0xfffd;
  if (v >= 0x80 && v <= 0x9f) return c1_remap[v - 0x80];
  return v;
}

/* ---- link emission ---- */

static int emit(kr_html_extractor_t *x, int kind, const char *ctx,
                const char *p, size_t n) {
  return kr__extract_emit(&x->em, (kr_extract_kind_t)kind, ctx, p, n);
}

static int is_ws(char c) { return IS(c, K_WS) != 0; }

/* Every candidate URL of a srcset (HTML "parse a srcset attribute"): URLs
 * are runs of non-whitespace; a run ending in commas ends its candidate,
 * otherwise descriptors follow up to a comma outside parentheses. */
static int emit_srcset(kr_html_extractor_t *x, const char *ctx, const char *p,
                       size_t n) {
  size_t i = 0;
  int rc;
  while (i < n) {
    while (i < n && (is_ws(p[i]) || p[i] == ',')) i++;
    if (i == n) break;
    size_t s = i;
    while (i < n && !is_ws(p[i])) i++;
    size_t e = i;
    if (p[e - 1] == ',') {
      while (e > s && p[e - 1] == ',') e--;
    } else {
      int paren = 0;
      for (; i < n; i++) {
        if (p[i] == '(') paren = 1;
        else if (p[i] == ')') paren = 0;
        else if (p[i] == ',' && !paren) break;
      }
    }
    if (e > s && (rc = emit(x, 'E', ctx, p + s, e - s))) return rc;
  }
  return 0;
}

/* The URL of a meta refresh content value (HTML "shared declarative
 * refresh steps"); 0 and nothing emitted when it has none. */
static int emit_refresh(kr_html_extractor_t *x, const char *p, size_t n) {
  size_t i = 0;
  while (i < n && is_ws(p[i])) i++;
  size_t d = i;
  while (i < n && IS(p[i], K_DIGIT)) i++;
  if (i == d && (i == n || p[i] != '.')) return 0;
  while (i < n && (IS(p[i], K_DIGIT) || p[i] == '.')) i++;
  if (i == n) return 0;
  if (!(p[i] == ';' || p[i] == ',' || is_ws(p[i]))) return 0;
  while (i < n && is_ws(p[i])) i++;
  if (i < n && (p[i] == ';' || p[i] == ',')) i++;
  while (i < n && is_ws(p[i])) i++;
  if (i == n) return 0;
  size_t url = i; /* urlString when "url=" is incomplete */
  if ((p[i] | 0x20) == 'u') {
    i++;
    if (i == n || (p[i] | 0x20) != 'r') goto parse;
    i++;
    if (i == n || (p[i] | 0x20) != 'l') goto parse;
    i++;
    while (i < n && is_ws(p[i])) i++;
    if (i == n || p[i] != '=') goto parse;
    i++;
    while (i < n && is_ws(p[i])) i++;
  }
  /* skip quotes */
  url = i;
  if (i < n && (p[i] == '"' || p[i] == '\'')) {
    const char *q = memchr(p + i + 1, p[i], n - i - 1);
    url = i + 1;
    if (q) n = (size_t)(q - p);
  }
parse:
  return emit(x, 'L', "meta/@content", p + url, n - url);
}

static int value_is(const char *p, size_t n, const char *lit) {
  while (n && is_ws(p[0])) p++, n--;
  while (n && is_ws(p[n - 1])) n--;
  size_t l = strlen(lit);
  if (n != l) return 0;
  for (size_t k = 0; k < n; k++)
    if (LOWER(p[k]) != lit[k]) return 0;
  return 1;
}

/* link rel tokens that make the href an embed rather than a link. */
static int rel_is_embed(const char *p, size_t n) {
  size_t i = 0;
  while (i < n) {
    while (i < n && is_ws(p[i])) i++;
    size_t s = i;
    while (i < n && !is_ws(p[i])) i++;
    size_t l = i - s;
    if (!l) break;
    char tok[32];
    if (l >= sizeof tok) continue;
    for (size_t k = 0; k < l; k++) tok[k] = LOWER(p[s + k]);
    tok[l] = 0;
    if (strcmp(tok, "stylesheet") == 0 || strcmp(tok, "preload") == 0 ||
        strcmp(tok, "modulepreload") == 0 || strcmp(tok, "manifest") == 0 ||
        strcmp(tok, "apple-touch-startup-image") == 0 || strstr(tok, "icon"))
      return 1;
  }
  return 0;
}

static const struct rec *find_rec(const kr_html_extractor_t *x, uint8_t attr) {
  for (unsigned k = 0; k < x->nrec; k++)
    if (x->rec[k].attr == attr) return &x->rec[k];
  return NULL;
}

/* 1 if the value of this attribute of the current start tag is kept. */
static int wants(const kr_html_extractor_t *x, uint8_t attr) {
  uint8_t t = x->tag;
  if (x->tag_foreign)
    return (t == T_A || t == T_IMAGE || t == T_USE || t == T_FEIMAGE) &&
           (attr == A_HREF || attr == A_XLINK_HREF);
  if ((t == T_LINK && attr == A_REL) || (t == T_META && attr == A_HTTP_EQUIV) ||
      (t == T_INPUT && attr == A_TYPE))
    return 1;
  const struct urlattr *u = urlattr_lookup(t, attr);
  return u && (!(u->flags & U_FORMS) || (x->em.o.flags & KR_EXTRACT_FORMS));
}

/* A start tag ended: emit its links in attribute order. */
static int emit_tag_links(kr_html_extractor_t *x) {
  int rc = 0;
  const char *tb = x->tb.data ? x->tb.data : ""; /* unallocated if all empty */
  if (x->tag_foreign) {
    /* SVG 2: href wins over xlink:href. */
    const struct rec *r = find_rec(x, A_HREF);
    if (!r || r->bad) r = find_rec(x, A_XLINK_HREF);
    if (!r || r->bad) return 0;
    if (x->tag == T_A) return emit(x, 'L', "svg:a/@href", tb + r->off, r->len);
    return emit(x, 'E', "svg:image/@href", tb + r->off, r->len);
  }
  for (unsigned k = 0; k < x->nrec && !rc; k++) {
    const struct rec *r = &x->rec[k];
    const struct urlattr *u = urlattr_lookup(x->tag, r->attr);
    if (!u) continue; /* rel, http-equiv, type */
    if (u->kind == 'B') {
      if (x->base_done) continue;
      x->base_done = 1;
      if (!r->bad) rc = emit(x, 'B', u->ctx, tb + r->off, r->len);
      continue;
    }
    if (r->bad) {
      x->em.st.too_long++;
      continue;
    }
    const char *v = tb + r->off;
    int kind = u->kind;
    const struct rec *dep;
    switch (x->tag) {
    case T_LINK:
      dep = find_rec(x, A_REL);
      if (dep && !dep->bad && rel_is_embed(tb + dep->off, dep->len)) kind = 'E';
      break;
    case T_META:
      dep = find_rec(x, A_HTTP_EQUIV);
      if (dep && !dep->bad && value_is(tb + dep->off, dep->len, "refresh"))
        rc = emit_refresh(x, v, r->len);
      continue;
    case T_INPUT:
      if (r->attr == A_SRC) {
        dep = find_rec(x, A_TYPE);
        if (!dep || dep->bad || !value_is(tb + dep->off, dep->len, "image"))
          continue;
      }
      break;
    default:
      break;
    }
    if (u->flags & U_SRCSET) rc = emit_srcset(x, u->ctx, v, r->len);
    else rc = emit(x, kind, u->ctx, v, r->len);
  }
  return rc;
}

/* ---- the tokenizer ---- */

static void begin_tag(kr_html_extractor_t *x, int end) {
  x->end_tag = (uint8_t)end;
  x->tn_len = 0;
  x->self_closing = 0;
  x->seen = 0;
  x->nrec = 0;
  x->vmode = V_SKIP;
  kr_buf_reset(&x->tb);
}

static void end_tag_name(kr_html_extractor_t *x) {
  const struct tagdef *d =
      x->tn_len <= NAME_MAX_ ? tag_lookup(x->tn, x->tn_len) : NULL;
  x->tag = d ? d->id : T_OTHER;
  if (!x->end_tag && x->foreign && d && (d->flags & TF_BREAKOUT))
    x->foreign = 0;
  x->tag_foreign = x->foreign != 0;
}

static void begin_attr(kr_html_extractor_t *x) { x->an_len = 0; }

/* The attribute name is complete: decide where its value goes. */
static void end_attr_name(kr_html_extractor_t *x) {
  x->vmode = V_SKIP;
  if (x->end_tag) return;
  uint8_t a = x->an_len <= NAME_MAX_ ? attr_lookup(x->an, x->an_len) : A_OTHER;
  if (a == A_OTHER) return;
  if (x->seen & (1u << a)) return; /* duplicate: the first one counts */
  x->seen |= 1u << a;
  if (a == A_STYLE) {
    x->vmode = V_CSS;
  } else if (wants(x, a) && x->nrec < MAX_RECS) {
    struct rec *r = &x->rec[x->nrec];
    r->attr = a;
    r->bad = 0;
    r->off = (uint32_t)x->tb.len;
    r->len = 0;
    x->vrec = x->nrec++;
    x->vmode = V_REC;
  }
}

static void begin_value(kr_html_extractor_t *x) {
  if (x->vmode == V_CSS) kr__css_begin(&x->css, "@style/url()", "@style/@import");
}

static int end_value(kr_html_extractor_t *x) {
  if (x->vmode == V_REC) {
    struct rec *r = &x->rec[x->vrec];
    if (!r->bad) r->len = (uint32_t)(x->tb.len - r->off);
  } else if (x->vmode == V_CSS) {
    x->vmode = V_SKIP;
    return kr__css_finish(&x->css);
  }
  x->vmode = V_SKIP;
  return 0;
}

/* The tag token is complete ('>' seen). */
static int emit_tag(kr_html_extractor_t *x) {
  int rc = 0;
  x->em.st.tags++;
  x->state = S_DATA;
  if (x->end_tag) {
    if ((x->tag == T_SVG || x->tag == T_MATH) && x->foreign) x->foreign--;
    /* </p> and </br> end foreign content like the breakout start tags */
    else if (x->tn_len == 1 && x->tn[0] == 'p') x->foreign = 0;
    else if (x->tn_len == 2 && memcmp(x->tn, "br", 2) == 0) x->foreign = 0;
    return 0;
  }
  rc = emit_tag_links(x);
  if (x->tag_foreign) {
    if ((x->tag == T_SVG || x->tag == T_MATH) && !x->self_closing &&
        x->foreign < UINT32_MAX)
      x->foreign++;
    return rc;
  }
  switch (x->tag) {
  case T_SVG:
  case T_MATH:
    if (!x->self_closing) x->foreign = 1;
    break;
  case T_SCRIPT:
    set_raw(x, T_SCRIPT);
    x->state = S_SCRIPT;
    break;
  case T_STYLE:
    kr__css_begin(&x->css, "style/url()", "style/@import");
    /* fall through */
  case T_TEXTAREA:
  case T_TITLE:
  case T_XMP:
  case T_IFRAME:
  case T_NOEMBED:
  case T_NOFRAMES:
    set_raw(x, x->tag);
    x->state = S_RAW;
    break;
  case T_PLAINTEXT:
    x->state = S_PLAINTEXT;
    break;
  default:
    break;
  }
  return rc;
}

/* Held "</nam" of a non-matching end tag goes to the CSS scanner. */
static int flush_held(kr_html_extractor_t *x) {
  int rc = 0;
  if (x->raw == T_STYLE && x->held_n) rc = kr__css_feed(&x->css, x->held, x->held_n);
  x->held_n = 0;
  return rc;
}

/* Named reference complete (c is the byte after the name, not consumed).
 * Returns 1 if c (a ';') was consumed. */
static int end_named(kr_html_extractor_t *x, char c, int *rc) {
  const struct entity *e = entity_lookup(x->ent, x->ent_len);
  if (e && (c == ';' || (e->legacy && c != '='))) {
    *rc = vput_cp(x, e->cp);
    return c == ';';
  }
  /* Not a reference (or a legacy one followed by '=' in an attribute:
   * "?a=1&copy=2" stays as written). */
  if (!(*rc = vput(x, "&", 1))) *rc = vput(x, x->ent, x->ent_len);
  return 0;
}

int kr_extract_html_feed(kr_html_extractor_t *x, const void *data, size_t n) {
  const char *p = data;
  size_t i = 0;
  int rc = x->em.stop;
  assert(!x->finished);
  if (rc) goto out;
  while (i < n) {
    char c = p[i];
    switch (x->state) {
    case S_DATA: {
      const char *lt = memchr(p + i, '<', n - i);
      if (!lt) {
        i = n;
        break;
      }
      i = (size_t)(lt - p) + 1;
      x->state = S_TAG_OPEN;
      break;
    }
    case S_TAG_OPEN:
      if (IS(c, K_ALPHA)) {
        begin_tag(x, 0);
        x->state = S_TAG_NAME;
      } else if (c == '!') {
        i++;
        x->md_n = 0;
        x->md_cand = MD_COMMENT | MD_DOCTYPE | (x->foreign ? MD_CDATA : 0);
        x->state = S_MDO;
      } else if (c == '/') {
        i++;
        x->state = S_END_TAG_OPEN;
      } else if (c == '?') {
        x->state = S_BOGUS_COMMENT;
      } else {
        x->state = S_DATA; /* the '<' was text */
      }
      break;
    case S_END_TAG_OPEN:
      if (IS(c, K_ALPHA)) {
        begin_tag(x, 1);
        x->state = S_TAG_NAME;
      } else if (c == '>') {
        i++;
        x->state = S_DATA;
      } else {
        x->state = S_BOGUS_COMMENT;
      }
      break;
    case S_TAG_NAME:
      for (; i < n; i++) {
        c = p[i];
        if (IS(c, K_WS) || c == '/' || c == '>') break;
        if (x->tn_len < NAME_MAX_) x->tn[x->tn_len++] = LOWER(c);
        else x->tn_len = NAME_MAX_ + 1;
        if (c == 0) x->tn_len = NAME_MAX_ + 1; /* U+FFFD: no tag we know */
      }
      if (i == n) break;
      i++;
      end_tag_name(x);
      if (c == '>') rc = emit_tag(x);
      else x->state = c == '/' ? S_SELF_CLOSING : S_BEFORE_ATTR_NAME;
      break;
    case S_BEFORE_ATTR_NAME:
      if (IS(c, K_WS)) {
        i++;
      } else if (c == '/' || c == '>') {
        x->state = S_AFTER_ATTR_NAME;
      } else {
        begin_attr(x);
        if (c == '=') { /* becomes part of the name */
          i++;
          x->an[x->an_len++] = '=';
        }
        x->state = S_ATTR_NAME;
      }
      break;
    case S_ATTR_NAME:
      for (; i < n; i++) {
        c = p[i];
        if (IS(c, K_WS) || c == '/' || c == '>' || c == '=') break;
        if (x->an_len < NAME_MAX_) x->an[x->an_len++] = LOWER(c);
        else x->an_len = NAME_MAX_ + 1;
      }
      if (i == n) break;
      end_attr_name(x);
      if (c == '=') {
        i++;
        x->state = S_BEFORE_ATTR_VALUE;
      } else {
        x->state = S_AFTER_ATTR_NAME;
      }
      break;
    case S_AFTER_ATTR_NAME:
      if (IS(c, K_WS)) {
        i++;
      } else if (c == '/') {
        i++;
        x->state = S_SELF_CLOSING;
      } else if (c == '=') {
        i++;
        x->state = S_BEFORE_ATTR_VALUE;
      } else if (c == '>') {
        i++;
        rc = emit_tag(x);
      } else {
        begin_attr(x);
        x->state = S_ATTR_NAME;
      }
      break;
    case S_BEFORE_ATTR_VALUE:
      if (IS(c, K_WS)) {
        i++;
      } else if (c == '"' || c == '\'') {
        i++;
        x->vquote = (uint8_t)c;
        begin_value(x);
        x->state = S_AV_QUOTED;
      } else if (c == '>') { /* missing value: empty */
        i++;
        begin_value(x);
        if (!(rc = end_value(x))) rc = emit_tag(x);
      } else {
        begin_value(x);
        x->state = S_AV_UNQUOTED;
      }
      break;
    case S_AV_QUOTED: {
      char q = (char)x->vquote;
      if (x->vmode == V_SKIP) {
        const char *e = memchr(p + i, q, n - i);
        if (!e) {
          i = n;
          break;
        }
        i = (size_t)(e - p) + 1;
        x->state = S_AFTER_AV_QUOTED;
        break;
      }
      size_t j = i;
      while (j < n && p[j] != q && p[j] != '&' && p[j] != 0) j++;
      if (j > i && (rc = vput(x, p + i, j - i))) break;
      i = j;
      if (i == n) break;
      i++;
      if (p[j] == q) {
        rc = end_value(x);
        x->state = S_AFTER_AV_QUOTED;
      } else if (p[j] == '&') {
        x->ret = S_AV_QUOTED;
        x->state = S_CR;
      } else {
        rc = vput(x, "\xef\xbf\xbd", 3);
      }
      break;
    }
    case S_AV_UNQUOTED: {
      size_t j = i;
      while (j < n && !IS(p[j], K_WS) && p[j] != '>' && p[j] != '&' && p[j] != 0)
        j++;
      if (j > i && (rc = vput(x, p + i, j - i))) break;
      i = j;
      if (i == n) break;
      i++;
      c = p[j];
      if (IS(c, K_WS)) {
        rc = end_value(x);
        x->state = S_BEFORE_ATTR_NAME;
      } else if (c == '>') {
        if (!(rc = end_value(x))) rc = emit_tag(x);
      } else if (c == '&') {
        if (x->vmode == V_SKIP) break;
        x->ret = S_AV_UNQUOTED;
        x->state = S_CR;
      } else {
        rc = vput(x, "\xef\xbf\xbd", 3);
      }
      break;
    }
    case S_AFTER_AV_QUOTED:
      if (IS(c, K_WS)) {
        i++;
        x->state = S_BEFORE_ATTR_NAME;
      } else if (c == '/') {
        i++;
        x->state = S_SELF_CLOSING;
      } else if (c == '>') {
        i++;
        rc = emit_tag(x);
      } else {
        x->state = S_BEFORE_ATTR_NAME;
      }
      break;
    case S_SELF_CLOSING:
      if (c == '>') {
        i++;
        x->self_closing = 1;
        rc = emit_tag(x);
      } else {
        x->state = S_BEFORE_ATTR_NAME;
      }
      break;

    /* character references in attribute values */
    case S_CR:
      if (IS(c, K_ALPHA | K_DIGIT)) {
        x->ent_len = 0;
        x->state = S_CR_NAMED;
      } else if (c == '#') {
        i++;
        x->state = S_CR_NUM;
      } else {
        rc = vput(x, "&", 1);
        x->state = x->ret;
      }
      break;
    case S_CR_NAMED:
      if (IS(c, K_ALPHA | K_DIGIT)) {
        if (x->ent_len < ENT_MAX) {
          i++;
          x->ent[x->ent_len++] = c;
        } else { /* no entity is this long: it was text */
          if (!(rc = vput(x, "&", 1))) rc = vput(x, x->ent, x->ent_len);
          x->state = x->ret;
        }
      } else {
        if (end_named(x, c, &rc)) i++;
        x->state = x->ret;
      }
      break;
    case S_CR_NUM:
      x->num = 0;
      if (c == 'x' || c == 'X') {
        i++;
        x->num_x = (uint8_t)c;
        x->state = S_CR_HEX_START;
      } else if (IS(c, K_DIGIT)) {
        x->state = S_CR_DEC;
      } else {
        rc = vput(x, "&#", 2);
        x->state = x->ret;
      }
      break;
    case S_CR_HEX_START:
      if (IS(c, K_HEX)) {
        x->state = S_CR_HEX;
      } else {
        char lit[3] = {'&', '#', (char)x->num_x};
        rc = vput(x, lit, 3);
        x->state = x->ret;
      }
      break;
    case S_CR_DEC:
    case S_CR_HEX:
      if (x->state == S_CR_DEC ? IS(c, K_DIGIT) : IS(c, K_HEX)) {
        i++;
        uint32_t d = IS(c, K_DIGIT) ? (uint32_t)(c - '0')
                                    : (uint32_t)((c | 0x20) - 'a' + 10);
        uint32_t v = x->num * (x->state == S_CR_DEC ? 10 : 16) + d;
        x->num = v > 0x110000 ? 0x110000 : v;
      } else {
        if (c == ';') i++;
        rc = vput_cp(x, numeric_cp(x->num));
        x->state = x->ret;
      }
      break;

    /* markup declarations, comments */
    case S_MDO: {
      static const char *const cand[] = {"--", "doctype", "[CDATA["};
      uint8_t keep = 0;
      for (unsigned k = 0; k < 3; k++) {
        if (!(x->md_cand & (1u << k))) continue;
        char want = cand[k][x->md_n];
        if (want && (k == 1 ? LOWER(c) == want : c == want)) keep |= (uint8_t)(1u << k);
      }
      i++;
      x->md_cand = keep;
      x->md_n++;
      if (!keep) {
        x->state = c == '>' ? S_DATA : S_BOGUS_COMMENT;
      } else if ((keep & MD_COMMENT) && x->md_n == 2) {
        x->state = S_COMMENT_START;
      } else if (x->md_n == 7) {
        x->state = (keep & MD_CDATA) ? S_CDATA : S_BOGUS_COMMENT; /* DOCTYPE */
      }
      break;
    }
    case S_COMMENT_START:
      if (c == '-') {
        i++;
        x->state = S_COMMENT_START_DASH;
      } else if (c == '>') { /* "<!-->" */
        i++;
        x->state = S_DATA;
      } else {
        x->state = S_COMMENT;
      }
      break;
    case S_COMMENT_START_DASH:
      if (c == '-') {
        i++;
        x->state = S_COMMENT_END;
      } else if (c == '>') { /* "<!--->" */
        i++;
        x->state = S_DATA;
      } else {
        x->state = S_COMMENT;
      }
      break;
    case S_COMMENT: {
      const char *d = memchr(p + i, '-', n - i);
      if (!d) {
        i = n;
        break;
      }
      i = (size_t)(d - p) + 1;
      x->state = S_COMMENT_END_DASH;
      break;
    }
    case S_COMMENT_END_DASH:
      if (c == '-') {
        i++;
        x->state = S_COMMENT_END;
      } else {
        x->state = S_COMMENT;
      }
      break;
    case S_COMMENT_END:
      if (c == '>') {
        i++;
        x->state = S_DATA;
      } else if (c == '!') {
        i++;
        x->state = S_COMMENT_END_BANG;
      } else if (c == '-') {
        i++;
      } else {
        x->state = S_COMMENT;
      }
      break;
    case S_COMMENT_END_BANG:
      if (c == '>') { /* "--!>" */
        i++;
        x->state = S_DATA;
      } else if (c == '-') {
        i++;
        x->state = S_COMMENT_END_DASH;
      } else {
        x->state = S_COMMENT;
      }
      break;
    case S_BOGUS_COMMENT: {
      const char *g = memchr(p + i, '>', n - i);
      if (!g) {
        i = n;
        break;
      }
      i = (size_t)(g - p) + 1;
      x->state = S_DATA;
      break;
    }
    case S_CDATA: {
      const char *b = memchr(p + i, ']', n - i);
      if (!b) {
        i = n;
        break;
      }
      i = (size_t)(b - p) + 1;
      x->state = S_CDATA_B1;
      break;
    }
    case S_CDATA_B1:
      if (c == ']') {
        i++;
        x->state = S_CDATA_B2;
      } else {
        x->state = S_CDATA;
      }
      break;
    case S_CDATA_B2:
      if (c == '>') {
        i++;
        x->state = S_DATA;
      } else if (c == ']') {
        i++;
      } else {
        x->state = S_CDATA;
      }
      break;

    /* RAWTEXT and RCDATA: only "</name" matters; <style> text is CSS */
    case S_RAW: {
      const char *lt = memchr(p + i, '<', n - i);
      size_t e = lt ? (size_t)(lt - p) : n;
      if (x->raw == T_STYLE && e > i && (rc = kr__css_feed(&x->css, p + i, e - i)))
        break;
      if (!lt) {
        i = n;
        break;
      }
      i = e + 1;
      x->held[0] = '<';
      x->held_n = 1;
      x->state = S_RAW_LT;
      break;
    }
    case S_RAW_LT:
      if (c == '/') {
        i++;
        x->held[x->held_n++] = '/';
        x->em_n = 0;
        x->ret = S_RAW;
        x->state = S_END_NAME;
      } else {
        rc = flush_held(x);
        x->state = S_RAW;
      }
      break;
    case S_END_NAME: { /* "appropriate end tag" of raw text or script */
      const char *want = x->raw_name;
      size_t wl = x->raw_len;
      if (IS(c, K_ALPHA) && x->em_n < wl && LOWER(c) == want[x->em_n]) {
        i++;
        x->em_n++;
        if (x->held_n < sizeof x->held) x->held[x->held_n++] = c;
      } else if (x->em_n == wl && (IS(c, K_WS) || c == '/' || c == '>')) {
        x->held_n = 0;
        if (x->raw == T_STYLE && (rc = kr__css_finish(&x->css))) break;
        begin_tag(x, 1);
        memcpy(x->tn, want, wl);
        x->tn_len = (uint8_t)wl;
        end_tag_name(x);
        x->raw = 0;
        x->state = S_BEFORE_ATTR_NAME; /* reconsume ws, '/' or '>' there */
      } else { /* text after all */
        rc = flush_held(x);
        x->state = x->ret;
      }
      break;
    }

    /* script data and its escapes: no links, only the end matters */
    case S_SCRIPT: {
      const char *lt = memchr(p + i, '<', n - i);
      if (!lt) {
        i = n;
        break;
      }
      i = (size_t)(lt - p) + 1;
      x->state = S_SCRIPT_LT;
      break;
    }
    case S_SCRIPT_LT:
      if (c == '/') {
        i++;
        x->em_n = 0;
        x->held_n = 0;
        x->ret = S_SCRIPT;
        x->state = S_END_NAME;
      } else if (c == '!') {
        i++;
        x->state = S_SCRIPT_ESC_START;
      } else {
        x->state = S_SCRIPT;
      }
      break;
    case S_SCRIPT_ESC_START:
      if (c == '-') {
        i++;
        x->state = S_SCRIPT_ESC_START_DASH;
      } else {
        x->state = S_SCRIPT;
      }
      break;
    case S_SCRIPT_ESC_START_DASH:
      if (c == '-') {
        i++;
        x->state = S_SCRIPT_ESC_DD;
      } else {
        x->state = S_SCRIPT;
      }
      break;
    case S_SCRIPT_ESC:
      while (i < n && p[i] != '-' && p[i] != '<') i++;
      if (i == n) break;
      x->state = p[i] == '-' ? S_SCRIPT_ESC_DASH : S_SCRIPT_ESC_LT;
      i++;
      break;
    case S_SCRIPT_ESC_DASH:
    case S_SCRIPT_ESC_DD:
      i++;
      if (c == '-') x->state = S_SCRIPT_ESC_DD;
      else if (c == '<') x->state = S_SCRIPT_ESC_LT;
      else if (c == '>' && x->state == S_SCRIPT_ESC_DD) x->state = S_SCRIPT;
      else x->state = S_SCRIPT_ESC;
      break;
    case S_SCRIPT_ESC_LT:
      if (c == '/') {
        i++;
        x->em_n = 0;
        x->held_n = 0;
        x->ret = S_SCRIPT_ESC;
        x->state = S_END_NAME;
      } else if (IS(c, K_ALPHA)) {
        x->sc_n = 0;
        x->sc_bad = 0;
        x->state = S_SCRIPT_DESC_START;
      } else {
        x->state = S_SCRIPT_ESC;
      }
      break;
    case S_SCRIPT_DESC_START:
    case S_SCRIPT_DESC_END: {
      int start = x->state == S_SCRIPT_DESC_START;
      if (IS(c, K_WS) || c == '/' || c == '>') {
        i++;
        int is_script = !x->sc_bad && x->sc_n == 6;
        if (start) x->state = is_script ? S_SCRIPT_DESC : S_SCRIPT_ESC;
        else x->state = is_script ? S_SCRIPT_ESC : S_SCRIPT_DESC;
      } else if (IS(c, K_ALPHA)) {
        i++;
        if (x->sc_n < 6 && LOWER(c) == "script"[x->sc_n]) x->sc_n++;
        else x->sc_bad = 1;
      } else {
        x->state = start ? S_SCRIPT_ESC : S_SCRIPT_DESC;
      }
      break;
    }
    case S_SCRIPT_DESC:
      while (i < n && p[i] != '-' && p[i] != '<') i++;
      if (i == n) break;
      x->state = p[i] == '-' ? S_SCRIPT_DESC_DASH : S_SCRIPT_DESC_LT;
      i++;
      break;
    case S_SCRIPT_DESC_DASH:
    case S_SCRIPT_DESC_DD:
      i++;
      if (c == '-') x->state = S_SCRIPT_DESC_DD;
      else if (c == '<') x->state = S_SCRIPT_DESC_LT;
      else if (c == '>' && x->state == S_SCRIPT_DESC_DD) x->state = S_SCRIPT;
      else x->state = S_SCRIPT_DESC;
      break;
    case S_SCRIPT_DESC_LT:
      if (c == '/') {
        i++;
        x->sc_n = 0;
        x->sc_bad = 0;
        x->state = S_SCRIPT_DESC_END;
      } else {
        x->state = S_SCRIPT_DESC;
      }
      break;

    case S_PLAINTEXT:
    case S_DONE:
      i = n;
      break;
    }
    if (rc) break;
  }
out:
  if (rc == KR__EXTRACT_STOP) x->state = S_DONE;
  return rc < 0 ? rc : 0;
}

int kr_extract_html_finish(kr_html_extractor_t *x) {
  int rc = x->em.stop;
  assert(!x->finished);
  x->finished = 1;
  if (rc) return rc < 0 ? rc : 0;
  /* EOF in a <style> element ends its stylesheet; EOF in a tag drops the
   * tag (WHATWG), so nothing else is pending. */
  if (x->raw == T_STYLE &&
      (x->state == S_RAW || x->state == S_RAW_LT || x->state == S_END_NAME)) {
    rc = flush_held(x);
    if (!rc) rc = kr__css_finish(&x->css);
  }
  x->state = S_DONE;
  return rc < 0 ? rc : 0;
}

kr_html_extractor_t *kr_extract_html_new(const kr_extract_opts_t *opts,
                                         kr_extract_cb cb, void *ud) {
#ifndef NDEBUG
  for (size_t k = 1; k < NENTITIES; k++)
    assert(strcmp(entities[k - 1].name, entities[k].name) < 0);
#endif
  kr_html_extractor_t *x = kr_xcalloc(1, sizeof *x);
  x->em.o = kr__extract_opts(opts);
  kr__css_init(&x->css, &x->em);
  /* Room for every recorded value of one tag at full length. */
  kr_buf_init(&x->tb, MAX_RECS * x->em.o.max_value);
  kr_extract_html_reset(x, cb, ud);
  return x;
}

void kr_extract_html_reset(kr_html_extractor_t *x, kr_extract_cb cb, void *ud) {
  assert(cb);
  x->em.cb = cb;
  x->em.ud = ud;
  memset(&x->em.st, 0, sizeof x->em.st);
  x->em.stop = 0;
  kr__css_begin(&x->css, "style/url()", "style/@import");
  kr_buf_reset(&x->tb);
  x->nrec = 0;
  x->state = S_DATA;
  x->raw = 0;
  x->foreign = 0;
  x->base_done = 0;
  x->finished = 0;
  x->held_n = 0;
  x->vmode = V_SKIP;
}

const kr_extract_stats_t *kr_extract_html_stats(const kr_html_extractor_t *x) {
  return &x->em.st;
}

void kr_extract_html_free(kr_html_extractor_t *x) {
  if (!x) return;
  kr__css_free(&x->css);
  kr_buf_free(&x->tb);
  free(x);
}
