/**
 * A decimal integer literal as JSON writes one: an optional minus, no plus, no leading zeros. Ids
 * in paths, queries, links and command lines are accepted only in this form, never coerced.
 */
export const INTEGER_LITERAL = /^-?(0|[1-9][0-9]*)$/;
