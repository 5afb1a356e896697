import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';

const repoRoot = fileURLToPath(new URL('..', import.meta.url));
const ENTRY_POINTS = ['src/index.ts', 'src/testing.ts'];

/**
 * The names an entry point exports without a TSDoc comment, found as an editor finds a hover's text:
 * the checker's documentation comment of the declaration each export resolves to.
 */
function undocumentedExports(checker: ts.TypeChecker, source: ts.SourceFile): string[] {
  const moduleSymbol = checker.getSymbolAtLocation(source);
  if (moduleSymbol === undefined) throw new Error(`${source.fileName} is not a module`);
  const exports = checker.getExportsOfModule(moduleSymbol);
  // An entry point exporting nothing would pass vacuously: it means the walk went wrong.
  if (exports.length === 0) throw new Error(`${source.fileName} exports nothing`);
  const missing: string[] = [];
  for (const exported of exports) {
    const target = exported.flags & ts.SymbolFlags.Alias ? checker.getAliasedSymbol(exported) : exported;
    if (target.declarations === undefined || target.declarations.length === 0) {
      missing.push(`${exported.name} (no declaration found)`);
    } else if (target.declarations.some(ts.isSourceFile)) {
      // A re-exported module (`export * as name from`) resolves to a source file, to which the
      // checker attaches no documentation comment: the one on the re-export statement is read.
      if (moduleExportDoc(exported) === '') missing.push(`${exported.name} (re-exported module)`);
    } else if (ts.displayPartsToString(target.getDocumentationComment(checker)).trim() === '') {
      missing.push(exported.name);
    }
  }
  return missing;
}

/** The TSDoc text on the `export * as name from` statement that declares `exported`, if any. */
function moduleExportDoc(exported: ts.Symbol): string {
  const statement = exported.declarations?.find(ts.isNamespaceExport)?.parent;
  if (statement === undefined) return '';
  return ts
    .getJSDocCommentsAndTags(statement)
    .map((doc) => (ts.isJSDoc(doc) ? (ts.getTextOfJSDocComment(doc.comment) ?? '') : ''))
    .join('')
    .trim();
}

describe('public API documentation', () => {
  it('has a TSDoc comment on every export of troupe and troupe/testing', () => {
    const configPath = path.join(repoRoot, 'tsconfig.json');
    const config = ts.getParsedCommandLineOfConfigFile(configPath, undefined, {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => {
        throw new Error(ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n'));
      },
    });
    if (config === undefined) throw new Error(`could not read ${configPath}`);
    expect(config.errors.map((error) => ts.flattenDiagnosticMessageText(error.messageText, '\n'))).toEqual(
      [],
    );
    // Only the entry points and what they import: no emit, no type check beyond symbol resolution.
    const rootNames = ENTRY_POINTS.map((file) => path.join(repoRoot, file));
    const program = ts.createProgram({ rootNames, options: { ...config.options, noEmit: true } });
    const checker = program.getTypeChecker();
    const undocumented: Record<string, string[]> = {};
    for (const file of ENTRY_POINTS) {
      const source = program.getSourceFile(path.join(repoRoot, file));
      if (source === undefined) throw new Error(`${file} is not in the program`);
      const names = undocumentedExports(checker, source);
      if (names.length > 0) undocumented[file] = names.sort();
    }
    expect(undocumented).toEqual({});
  });
});
