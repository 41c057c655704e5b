/** A recipe file that does not load or check: the message names the file and the field. */
export class RecipeError extends Error {
  constructor(
    readonly file: string,
    readonly field: string,
    message: string,
  ) {
    super(`recipes/${file}: ${field} ${message}`);
    this.name = 'RecipeError';
  }
}
