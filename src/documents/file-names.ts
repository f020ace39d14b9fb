/**
 * File names of uploads and downloads: one list of the extensions Signet neither accepts as an
 * upload nor serves (src/signing-form/attachments.ts refuses them with DocuSeal's "File type '.exe'
 * is not allowed."; src/documents/file-routes.ts answers 422 rather than serve one), and how an
 * extension is read from a name.
 */
import path from 'node:path';

/**
 * Programs, installers, libraries, scripts, shortcuts and disk images of Windows, macOS, Linux,
 * Android and iOS, and server-side pages (lower case, without the dot): DocuSeal's list of ~90
 * ("File type '.exe' is not allowed.") and the ones a click would run or mount besides.
 */
export const DANGEROUS_EXTENSIONS: ReadonlySet<string> = new Set([
  // Windows programs, libraries, installers, shortcuts, registry, control panel
  'exe',
  'com',
  'scr',
  'pif',
  'cpl',
  'dll',
  'ocx',
  'sys',
  'drv',
  'msi',
  'msp',
  'mst',
  'msix',
  'msixbundle',
  'appx',
  'appxbundle',
  'msc',
  'lnk',
  'scf',
  'url',
  'reg',
  'inf',
  'ins',
  'isp',
  'hta',
  'gadget',
  'application',
  'appref-ms',
  'xbap',
  'vsix',
  'vsto',
  'xll',
  'cab',
  'diagcab',
  'chm',
  'jnlp',
  'settingcontent-ms',
  'library-ms',
  'website',
  // Windows scripts
  'bat',
  'cmd',
  'vb',
  'vbs',
  'vbe',
  'js',
  'jse',
  'ws',
  'wsf',
  'wsc',
  'wsh',
  'ps1',
  'ps1xml',
  'ps2',
  'ps2xml',
  'psc1',
  'psc2',
  'psd1',
  'psm1',
  'pssc',
  'msh',
  'msh1',
  'msh2',
  'mshxml',
  'msh1xml',
  'msh2xml',
  'sct',
  // Unix shells and interpreters, packages and binaries
  'sh',
  'bash',
  'zsh',
  'csh',
  'tcsh',
  'ksh',
  'fish',
  'command',
  'run',
  'bin',
  'elf',
  'out',
  'so',
  'ko',
  'deb',
  'rpm',
  'appimage',
  'snap',
  'flatpak',
  'py',
  'pyc',
  'pyo',
  'pyw',
  'pl',
  'pm',
  'rb',
  'lua',
  'tcl',
  'mjs',
  'cjs',
  // macOS
  'app',
  'dmg',
  'pkg',
  'mpkg',
  'action',
  'workflow',
  'scpt',
  'scptd',
  'osax',
  'dylib',
  'kext',
  // Java, Android, iOS
  'jar',
  'class',
  'war',
  'ear',
  'apk',
  'xapk',
  'apks',
  'aab',
  'dex',
  'ipa',
  // server-side pages
  'php',
  'php3',
  'php4',
  'php5',
  'phtml',
  'phar',
  'asp',
  'aspx',
  'jsp',
  'cgi',
  // Disk images and other Windows formats a click opens or runs
  'ade',
  'adp',
  'hlp',
  'img',
  'iso',
  'vhd',
  'vhdx',
  'xap',
]);

/**
 * The extension of `filename` (lower case, without the dot; '' when none), read as Windows does:
 * trailing dots and spaces are dropped first, so "setup.exe. " is an .exe.
 */
export function extensionOf(filename: string): string {
  const name = filename.trim().replace(/[.\s]+$/, '');
  const dot = name.lastIndexOf('.');
  return dot > 0 || (dot === 0 && name.length > 1) ? name.slice(dot + 1).toLowerCase() : '';
}

/** The extension of `filename` when it is in DANGEROUS_EXTENSIONS, else null. */
export function dangerousExtensionOf(filename: string): string | null {
  const extension = extensionOf(filename);
  return extension !== '' && DANGEROUS_EXTENSIONS.has(extension) ? extension : null;
}

/**
 * The last segment of a name as a client sent it, either slash counting as a separator, without
 * control characters (Unicode Cc) and surrounding spaces; '' when nothing is left.
 */
export function baseFilename(name: string): string {
  return path.posix
    .basename(name.replace(/\\/g, '/'))
    .replace(/\p{Cc}/gu, '')
    .trim();
}
