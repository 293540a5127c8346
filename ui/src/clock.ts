// The one clock the window reads. Tests (and the mock backend) replace it.

let source: () => number = () => Date.now();

export function now(): number {
  return source();
}

export function setClock(fn: () => number): void {
  source = fn;
}
