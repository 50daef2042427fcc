// A strict JSON reader for settings files. JSON.parse reports some errors without a position
// and silently keeps the last of two duplicate keys; a security policy must not be ambiguous,
// so this reader rejects duplicates and always says where (line:column, 1-based) it stopped.

export class JsonSyntaxError extends Error {
  constructor(
    message: string,
    readonly line: number,
    readonly column: number,
  ) {
    super(message);
  }
}

/** `onValue`: called with the key path and the offset of every value, for `srt check`'s line numbers. */
export function parseJson(text: string, onValue?: (path: ReadonlyArray<string | number>, offset: number) => void): unknown {
  let i = 0;
  const path: Array<string | number> = [];

  const fail = (message: string, at = i): never => {
    let line = 1;
    let lineStart = 0;
    for (let k = 0; k < at && k < text.length; k++) {
      if (text[k] === '\n') {
        line++;
        lineStart = k + 1;
      }
    }
    throw new JsonSyntaxError(message, line, at - lineStart + 1);
  };
  const describe = (at: number): string =>
    at >= text.length ? 'end of file' : `${JSON.stringify(text[at])}`;

  const skipSpace = (): void => {
    while (i < text.length && (text[i] === ' ' || text[i] === '\t' || text[i] === '\n' || text[i] === '\r')) i++;
  };

  const parseString = (): string => {
    const start = i;
    i++; // opening quote
    while (i < text.length) {
      const c = text.charCodeAt(i);
      if (c === 0x22) {
        i++;
        return JSON.parse(text.slice(start, i)) as string;
      }
      if (c === 0x5c) {
        const next = text[i + 1];
        if (next === 'u') {
          if (!/^[0-9a-fA-F]{4}$/.test(text.slice(i + 2, i + 6))) fail('invalid \\u escape in string', i);
          i += 6;
        } else if (next !== undefined && '"\\/bfnrt'.includes(next)) {
          i += 2;
        } else {
          fail('invalid escape in string', i);
        }
        continue;
      }
      if (c < 0x20) fail('control character in string (use an escape such as \\n)', i);
      i++;
    }
    return fail('unterminated string', start);
  };

  const parseValue = (): unknown => {
    skipSpace();
    onValue?.(path, i);
    const c = text[i];
    if (c === '{') {
      i++;
      const obj: Record<string, unknown> = {};
      const seen = new Set<string>();
      skipSpace();
      if (text[i] === '}') {
        i++;
        return obj;
      }
      for (;;) {
        skipSpace();
        if (text[i] !== '"') fail(`expected a double-quoted property name, found ${describe(i)}`);
        const keyAt = i;
        const key = parseString();
        if (seen.has(key)) fail(`duplicate key ${JSON.stringify(key)}`, keyAt);
        seen.add(key);
        skipSpace();
        if (text[i] !== ':') fail(`expected ":" after property name, found ${describe(i)}`);
        i++;
        path.push(key);
        const value = parseValue();
        path.pop();
        Object.defineProperty(obj, key, { value, enumerable: true, writable: true, configurable: true });
        skipSpace();
        if (text[i] === ',') {
          i++;
          skipSpace();
          if (text[i] === '}') fail('trailing comma before "}"');
          continue;
        }
        if (text[i] === '}') {
          i++;
          return obj;
        }
        fail(`expected "," or "}" after property value, found ${describe(i)}`);
      }
    }
    if (c === '[') {
      i++;
      const arr: unknown[] = [];
      skipSpace();
      if (text[i] === ']') {
        i++;
        return arr;
      }
      for (;;) {
        path.push(arr.length);
        arr.push(parseValue());
        path.pop();
        skipSpace();
        if (text[i] === ',') {
          i++;
          skipSpace();
          if (text[i] === ']') fail('trailing comma before "]"');
          continue;
        }
        if (text[i] === ']') {
          i++;
          return arr;
        }
        fail(`expected "," or "]" after array element, found ${describe(i)}`);
      }
    }
    if (c === '"') return parseString();
    const literal = /^(?:true|false|null|-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?)/.exec(text.slice(i, i + 400));
    if (literal) {
      i += literal[0].length;
      return JSON.parse(literal[0]);
    }
    return fail(`unexpected ${describe(i)}`);
  };

  const value = parseValue();
  skipSpace();
  if (i < text.length) fail(`unexpected ${describe(i)} after the end of the document`);
  return value;
}
