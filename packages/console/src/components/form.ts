/** The text of the form's field `name` ('' when it has none, or holds a file). */
export function fieldText(form: HTMLFormElement, name: string): string {
  const value = new FormData(form).get(name);
  return typeof value === 'string' ? value : '';
}
