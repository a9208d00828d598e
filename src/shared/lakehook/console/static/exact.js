// JSON without rounding. Iceberg snapshot ids are 64-bit (and Hudi instants 17 digits): above 2^53 a JavaScript
// number cannot hold them, so plain JSON.parse would show and send back a neighbouring id. parse() keeps every
// integer a number cannot hold as its exact digits (a string, from the reviver's source text), and stringify()
// writes those digits back as the JSON number they were (JSON.rawJSON), so the API gets the value it emitted.

const longs = new WeakMap(); // an object or array parse() made -> the keys whose values are long integers' digits

/** Whether this browser gives a reviver the source text (JSON.parse source text access: Chromium 114,
 * Firefox 135, Safari 18.4). Without it the console cannot show 64-bit ids exactly and says so. */
export const supported = (() => {
  try {
    const probe = JSON.parse("[9007199254740993]", (key, value, context) => (key === "0" ? context?.source : value));
    return probe[0] === "9007199254740993" && typeof JSON.rawJSON === "function";
  } catch {
    return false;
  }
})();

const INTEGER = /^-?(0|[1-9]\d*)$/;

export function parse(text) {
  return JSON.parse(text, function (key, value, context) {
    if (typeof value !== "number" || Number.isSafeInteger(value) || !context || !INTEGER.test(context.source)) return value;
    let keys = longs.get(this);
    if (!keys) longs.set(this, (keys = new Set()));
    keys.add(key);
    return context.source;
  });
}

/** Whether `holder[key]` is a long integer parse() kept as its digits. */
export const isLong = (holder, key) => Boolean(longs.get(holder)?.has(String(key)));

export function stringify(value, space) {
  return JSON.stringify(
    value,
    function (key, item) {
      return typeof item === "string" && isLong(this, key) ? JSON.rawJSON(item) : item;
    },
    space
  );
}
